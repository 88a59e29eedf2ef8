# parca-agent and its BPF program: make rules included by the top-level
# Makefile (after PGXS, so that its default goal stays "all").
#
# bpf/vmlinux.h is generated from the build machine's BTF; the program is
# CO-RE, so libbpf relocates it for the kernel it runs on.

AGENT_PKGS := libbpf libelf libdw libpq zlib
AGENT_CFLAGS := -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror \
	-Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare \
	-Iagent -Ibpf -Isrc $(shell pkg-config --cflags $(AGENT_PKGS))
AGENT_LIBS := $(shell pkg-config --libs $(AGENT_PKGS)) -lstdc++ -lpthread -lm
AGENT_SRCS := $(wildcard agent/*.c)
AGENT_OBJS := $(AGENT_SRCS:.c=.o) agent/ids.o
BPFTOOL ?= bpftool
BPF_CLANG ?= clang
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux

all: agent/parca-agent

bpf/vmlinux.h:
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

bpf/profile.bpf.o: bpf/profile.bpf.c bpf/sample.h bpf/vmlinux.h
	$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Ibpf -c $< -o $@

bpf/profile.skel.h: bpf/profile.bpf.o
	$(BPFTOOL) gen skeleton $< name profile_bpf > $@.tmp && mv $@.tmp $@

agent/sampler.o: bpf/profile.skel.h

agent/%.o: agent/%.c $(wildcard agent/*.h) bpf/sample.h
	$(CC) $(AGENT_CFLAGS) -c $< -o $@

agent/ids.o: src/common/ids.c src/common/ids.h
	$(CC) $(AGENT_CFLAGS) -c $< -o $@

agent/parca-agent: $(AGENT_OBJS)
	$(CC) -o $@ $^ $(AGENT_LIBS)

install: install-agent
install-agent: agent/parca-agent
	$(INSTALL_PROGRAM) agent/parca-agent '$(DESTDIR)$(bindir)/parca-agent'

clean: clean-agent
clean-agent:
	rm -f agent/*.o agent/parca-agent bpf/vmlinux.h bpf/vmlinux.h.tmp \
		bpf/profile.bpf.o bpf/profile.skel.h bpf/profile.skel.h.tmp

.PHONY: install-agent clean-agent
