# SPDX-License-Identifier: GPL-2.0
# Out-of-tree build of rseq_slice.ko: `make` builds against the running
# kernel, `make KDIR=/path/to/headers` against another one.
KDIR ?= /lib/modules/$(shell uname -r)/build

all: module

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

selftests:
	$(MAKE) -C selftests

check:
	scripts/test

.PHONY: all module clean selftests check
