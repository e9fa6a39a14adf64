# libmulticall under AddressSanitizer and UndefinedBehaviorSanitizer
# (included by the Makefile):
#   make -C libmulticall test-asan
# builds the library, mc-calibrate, the examples and every test program with
# -fsanitize=address,undefined into build/asan/ (CC carries the flags, so
# every compile and link line has them) and runs test/run-tests.sh there:
# the same tests as `make test`, stopping at the first report
# (halt_on_error, -fno-sanitize-recover), leaks included.  The ABI checks
# are left to the plain build (MC_SANITIZED=1): sanitized objects have
# constructors and extra symbols by design.
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 MC_SANITIZED=1

.PHONY: test-asan
test-asan:
	+$(SAN_ENV) $(MAKE) B=$(B)/asan CC="$(CC) $(SANITIZE)" CFLAGS="-O1 -g" test
