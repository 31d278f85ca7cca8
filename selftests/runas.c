// SPDX-License-Identifier: GPL-2.0
/* runas UID PROG [ARG]...: drop every privilege to UID (gid = uid), exec. */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uid_t uid;

	if (argc < 3) {
		fprintf(stderr, "usage: runas UID PROG [ARG]...\n");
		return 2;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 10);
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) {
		perror("runas");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
