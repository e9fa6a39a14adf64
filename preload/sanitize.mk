# The preload library under AddressSanitizer and UndefinedBehaviorSanitizer
# (included by the Makefile):
#   make -C preload test-asan
# builds $(O)/asan/libsyscluster-preload.so with -fsanitize=address,undefined
# (CC carries the flags, so the link has them too) and runs test/asan.sh:
# the plain test programs under LD_PRELOAD="libasan.so:<that library>" —
# ASan's run-time library must come first in the preload list, before any
# library it instruments — compared with their plain runs.
# It is the no-guardian build (SC_TEST_NO_GUARDIAN, as the SIGKILL tests'
# control): the guardian runs in its own address space with only the
# library's image and the shared region mapped, where ASan's shadow memory
# is gone and no instrumented code can run.  The guardian is tested by
# `make test` (test/*.test.sh), everything else of the library here.
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_O := $(O)/asan

.PHONY: test-asan
test-asan: $(O)/test/semantics $(O)/test/fuzz $(O)/test/planned $(O)/test/libplanplugin.so
	+$(MAKE) O=$(ASAN_O) CC="$(CC) $(SANITIZE)" CFLAGS="-O1 -g -DSC_TEST_NO_GUARDIAN" $(ASAN_O)/libsyscluster-preload.so
	@CC="$(CC)" ASAN_LIB=$(ASAN_O)/libsyscluster-preload.so T=$(O)/test test/asan.sh
