# Installing libmulticall (included by the Makefile):
#   make -C libmulticall install PREFIX=/usr/local [DESTDIR=/stage]
#   make -C libmulticall uninstall PREFIX=… [DESTDIR=…]
# puts the header, the shared library (with its soname link and the
# development link), the static library, a pkg-config file, mc-calibrate and
# the manual pages (library functions in section 3, the overview in 7, the
# tool in 1) where a packager expects them.  The pkg-config file names the
# final paths (PREFIX, not DESTDIR).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL ?= install

MAN1 := $(wildcard man/*.1)
MAN3 := $(wildcard man/*.3)
MAN7 := $(wildcard man/*.7)

.PHONY: install uninstall
install: lib $(TOOLS)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	$(INSTALL) -m 755 $(B)/libmulticall.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libmulticall.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libmulticall.so
	$(INSTALL) -m 644 $(B)/libmulticall.a $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 644 include/multicall.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' libmulticall.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libmulticall.pc
	$(INSTALL) -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	# man resolves ".so" from the top of the manual tree: man/'s links name
	# their page alone (".so mc_explain.3"), installed ones its section too.
	for m in $(MAN3); do \
		sed 's|^\.so \([^/]*\)$$|.so man3/\1|' $$m > $(DESTDIR)$(MANDIR)/man3/$${m##*/} && \
		chmod 644 $(DESTDIR)$(MANDIR)/man3/$${m##*/} || exit 1; \
	done
	$(INSTALL) -m 644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libmulticall.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libmulticall.so $(DESTDIR)$(LIBDIR)/libmulticall.a \
		$(DESTDIR)$(INCLUDEDIR)/multicall.h $(DESTDIR)$(PKGCONFIGDIR)/libmulticall.pc \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(MAN3))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(MAN7)))
