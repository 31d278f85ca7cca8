// SPDX-License-Identifier: GPL-2.0
/*
 * cpu_online FILE...: write "1" to each FILE (/sys/devices/system/cpu/cpuN/
 * online), one after the other, while this process spins on the pause
 * instruction on the CPU that is already up.
 *
 * Why: under QEMU 7.2's -icount, single-threaded TCG runs the first vCPU
 * until the next timer deadline and gives the others only what is left,
 * unless it halts or executes pause. Linux 6.1 brings up a secondary CPU
 * with the boot CPU looping on schedule() (do_boot_cpu(), waiting for the
 * AP's callin), which does neither: the AP never runs again and the boot
 * hangs at "x86: Booting SMP configuration:". Booted with maxcpus=1, the
 * other CPUs come up here instead, from a child process, while the parent,
 * the other runnable task on CPU 0, pauses: each pause hands the AP a turn.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int i, j, status, fd;
	pid_t pid;

	for (i = 1; i < argc; i++) {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			fd = open(argv[i], O_WRONLY);
			if (fd < 0 || write(fd, "1", 1) != 1) {
				perror(argv[i]);
				_exit(1);
			}
			_exit(0);
		}
		while (waitpid(pid, &status, WNOHANG) == 0)
			for (j = 0; j < 1000; j++)
#if defined(__aarch64__)
				__asm__ __volatile__("yield");
#else
				__builtin_ia32_pause();
#endif
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}
