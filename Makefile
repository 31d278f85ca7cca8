# SPDX-License-Identifier: GPL-2.0
# Out-of-tree build of rseq_slice.ko: `make` builds against the running
# kernel, `make KDIR=/path/to/headers` against another one; and the
# user-space library, librseq-slice, with its LD_PRELOAD lock interposer
# (lib/, `make lib` alone).
KDIR ?= /lib/modules/$(shell uname -r)/build

all: lib module

lib:
	$(MAKE) -C lib

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# Without DKMS: into /lib/modules/VERSION/updates of KDIR's kernel, then
# depmod (kbuild skips it for a headers-only tree, which has no System.map).
# VERSION is the one the module's vermagic names, UTS_RELEASE (Debian's
# include/config/kernel.release says 6.1.192 for 6.1.0-57-amd64).
# INSTALL_MOD_PATH=DIR installs under DIR instead, as kbuild does.
install: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -a \
		$$(sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C lib clean

selftests:
	$(MAKE) -C selftests

check:
	scripts/test

.PHONY: all lib module install clean selftests check
