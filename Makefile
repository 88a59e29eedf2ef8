# parca for PostgreSQL: top-level build (PGXS).
#
# The extension is one shared library built from every C file under src/
# and common/libparca_common.a: the plain C it shares with the agent and
# the server (common/Makefile builds it once for all three, the pprof
# message's protobuf-c code generated from common/pprof/profile.proto).
# The install script is assembled from the numbered parts in sql/, so that
# each concern keeps its SQL beside its C.
#
# The eBPF agent (agent/, bpf/) has a Makefile of its own and needs clang,
# bpftool, libbpf, libdw and the kernel's BTF, which the extension does
# not: it is built only when asked, `make agent` and `make install-agent`.
# So is the push server (server/: libmicrohttpd, json-c, libpq), `make
# server` and `make install-server`, which installs the web UI it serves
# too (web/: `make web` bundles it from npm packages that scripts/deps.sh
# installs outside the tree, web/npm.sh).

EXTENSION = parca
EXTVERSION = 0.2
MODULE_big = parca

SRCS = $(sort $(wildcard src/*.c src/*/*.c))
OBJS = $(SRCS:.c=.o)
COMMON_LIB = common/libparca_common.a

SQL_PARTS = $(sort $(wildcard sql/[0-9]*.sql))
# Update scripts: parca--A--B.sql from the parts in sql/upgrade/A--B/, in
# order (docs/development.md, "Upgrades").
UPGRADES = $(notdir $(wildcard sql/upgrade/*--*))
DATA_built = $(EXTENSION)--$(EXTVERSION).sql $(UPGRADES:%=$(EXTENSION)--%.sql)

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir)/src -I$(srcdir)/common -DPARCA_EXTVERSION='"$(EXTVERSION)"' -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare -MMD -MP
SHLIB_LINK = $(COMMON_LIB) -lprotobuf-c -lz -lzstd -lcurl -lyaml -ldw -lelf
# The library's own references bind to its own definitions: PostgreSQL
# loads libraries with RTLD_GLOBAL, and a library loaded before this one
# may define the same names (Citus's citus_columnar has columnar_init and
# columnar_compression_level), which the calls here would otherwise reach.
SHLIB_LINK += -Wl,-Bsymbolic

# Tests: pg_regress cases under test/regress, run by scripts/test.sh
# against a temporary instance that preloads the library.
REGRESS = $(sort $(basename $(notdir $(wildcard test/regress/sql/*.sql))))
REGRESS_OPTS = --inputdir=test/regress --outputdir=test/regress \
	--temp-config=test/regress/parca.conf

EXTRA_CLEAN = $(OBJS:.o=.d) test/regress/results \
	test/regress/regression.diffs test/regress/regression.out

# No LLVM bitcode: the hot paths run with JIT off, and one compiler per
# object keeps the dependency files (-MMD) unambiguous.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

agent:
	$(MAKE) -C agent
install-agent:
	$(MAKE) -C agent install
clean: clean-agent
clean-agent:
	$(MAKE) -C agent clean
.PHONY: agent install-agent clean-agent

server:
	$(MAKE) -C server
install-server: web
	$(MAKE) -C server install install-web
clean: clean-server
clean-server:
	$(MAKE) -C server clean
	rm -rf web/dist
.PHONY: server install-server clean-server web

WEB_SOURCES = $(wildcard web/src/*) web/index.html web/style.css web/build.js web/build.sh web/tsconfig.json web/package-lock.json
web: web/dist/index.html
web/dist/index.html: $(WEB_SOURCES)
	bash web/build.sh

$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PARTS)
	cat $^ > $@

define upgrade_script
$(EXTENSION)--$(1).sql: $$(sort $$(wildcard sql/upgrade/$(1)/*.sql))
	cat $$^ > $$@
endef
$(foreach u,$(UPGRADES),$(eval $(call upgrade_script,$(u))))

# common/ is built by its own Makefile, which knows its dependencies; the
# extension's objects include its generated pprof header.
$(COMMON_LIB): $(wildcard common/*/*.[ch] common/*/*.proto) common/Makefile
	$(MAKE) -C common
$(OBJS) $(shlib): $(COMMON_LIB)
clean: clean-common
clean-common:
	$(MAKE) -C common clean
.PHONY: clean-common

# Header dependencies, written by the compiler (-MMD) beside each object.
-include $(OBJS:.o=.d)

.PHONY: bench
bench: all agent server
	bash bench/run.sh
