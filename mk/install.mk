# Installing syscluster (included by the Makefile):
#   make install PREFIX=/usr/local [DESTDIR=/stage] [PROFILE=release]
#   make uninstall PREFIX=… [DESTDIR=…]
#
#   PREFIX/bin/syscluster, mc-calibrate
#   PREFIX/lib/syscluster/syscluster-cli   the full command line, which
#                              syscluster execs for all but plain `run`
#   PREFIX/lib/syscluster/     what the binary loads or links: the preload
#                              library, the compiler plugin, its run-time
#                              archive and libmulticall.a (a link to ../)
#   PREFIX/lib/                libmulticall (.so with its soname, .a),
#                              pkgconfig/libmulticall.pc
#   PREFIX/include/multicall.h
#   PREFIX/share/man/          syscluster(1), syscluster-SUB(1) for each
#                              subcommand, mc-calibrate(1), libmulticall(7),
#                              the library's functions (3)
#   PREFIX/share/{bash-completion/completions,zsh/site-functions,
#                 fish/vendor_completions.d}: shell completions
#
# The binary finds its pieces in ../lib/syscluster relative to itself (then
# in the source tree it was built from), so lib/syscluster is not moved by
# a LIBDIR.  The manual pages and completions are generated from the flag
# table (crates/cli/examples/generate.rs); DESTDIR stages a package.
PREFIX ?= /usr/local
BINDIR := $(PREFIX)/bin
LIBDIR := $(PREFIX)/lib
PKGLIBDIR := $(LIBDIR)/syscluster
DATADIR := $(PREFIX)/share
MANDIR := $(DATADIR)/man
INSTALL ?= install
GEN := build/generated/$(PROFILE)

.PHONY: install uninstall install-build
install-build:
	$(MAKE) -s -C libmulticall
	$(MAKE) -s -C preload
	$(MAKE) -s -C llvm
	$(CARGO) build --profile $(PROFILE) --locked
	$(CARGO) run -q --profile $(PROFILE) --locked -p syscluster-cli --example generate -- man $(GEN)/man
	$(CARGO) run -q --profile $(PROFILE) --locked -p syscluster-cli --example generate -- completions $(GEN)/completions

install: install-build
	$(MAKE) -s -C libmulticall install PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) MANDIR=$(MANDIR) DESTDIR=$(DESTDIR)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions $(DESTDIR)$(DATADIR)/zsh/site-functions \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d
	$(INSTALL) -m 755 $(BIN) $(DESTDIR)$(BINDIR)/syscluster
	$(INSTALL) -m 755 $(BIN)-cli $(DESTDIR)$(PKGLIBDIR)/syscluster-cli
	$(INSTALL) -m 755 preload/build/libsyscluster-preload.so llvm/build/SysCluster.so $(DESTDIR)$(PKGLIBDIR)/
	$(INSTALL) -m 644 llvm/build/libsyscluster-rt.a $(DESTDIR)$(PKGLIBDIR)/
	ln -sf ../libmulticall.a $(DESTDIR)$(PKGLIBDIR)/libmulticall.a
	$(INSTALL) -m 644 $(GEN)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 644 $(GEN)/completions/syscluster.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/syscluster
	$(INSTALL) -m 644 $(GEN)/completions/_syscluster $(DESTDIR)$(DATADIR)/zsh/site-functions/_syscluster
	$(INSTALL) -m 644 $(GEN)/completions/syscluster.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/syscluster.fish

uninstall:
	$(MAKE) -s -C libmulticall uninstall PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) MANDIR=$(MANDIR) DESTDIR=$(DESTDIR)
	rm -f $(DESTDIR)$(BINDIR)/syscluster $(DESTDIR)$(MANDIR)/man1/syscluster.1 $(DESTDIR)$(MANDIR)/man1/syscluster-*.1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/syscluster $(DESTDIR)$(DATADIR)/zsh/site-functions/_syscluster \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/syscluster.fish
	rm -f $(addprefix $(DESTDIR)$(PKGLIBDIR)/,syscluster-cli libsyscluster-preload.so SysCluster.so libsyscluster-rt.a libmulticall.a)
	-rmdir $(DESTDIR)$(PKGLIBDIR)
