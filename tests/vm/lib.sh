# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Host-side library of the drivewatch VM harness.  Source it from bash:
#
#   . tests/vm/lib.sh
#   vm_prepare                      # packages + kernel (cached)
#   vm_build_initramfs "$work/initrd.cpio.gz" guest/scenario.sh 'service fragment'
#   vm_start "$outdir" "$work/initrd.cpio.gz"
#   vm_wait_marker service-started 120
#   vm_qmp '{"execute":"query-status"}'
#   vm_wait_exit 120; vm_extract_files "$outdir/console.log" "$outdir/files"
#
# Everything has a timeout.  QEMU runs under timeout(1) with a hard deadline
# (DW_VM_TIMEOUT), and vm_stop / prom_stop are safe to call from an EXIT trap.
# vm_start and prom_start must run in the caller's shell (not in $(...)),
# because they record PIDs in global variables.
#
# Tunables (environment):
#   DW_VM_CACHE    kernel cache dir           (/var/cache/drivewatch-vm)
#   DW_VM_KVER     kernel ABI, e.g. 6.1.0-57-amd64 (default: what the
#                  linux-image-amd64 metapackage depends on; falls back to
#                  the newest cached kernel when apt cannot tell)
#   DW_VM_MEM      guest memory (512M)        DW_VM_SMP  guest CPUs (1)
#   DW_VM_MAXCPUS  the machine's CPU slots (2, at least DW_VM_SMP): over 1,
#                  so that TCG keeps the guest's memory barriers (below)
#   DW_VM_TIMEOUT  hard QEMU deadline in s (300)
#   DW_VM_GUEST_PORT  port the guest service listens on (9647, drivewatch's default)
#   DW_VM_NIC      virtio (default) or e1000
#   DW_VM_NET_RESTRICT  slirp restrict= (on: the guest cannot reach the host
#                  or the outside; the hostfwd still works)
#   DW_VM_NETDEV_EXTRA  appended to -netdev user,..., e.g.
#                  ",hostfwd=tcp:127.0.0.1:2222-:22" (keep 127.0.0.1!)
#   DW_VM_APPEND   extra kernel command line (NAME=VALUE reaches /init's env)
#   DW_VM_EXTRA_MODULES  more kernel modules for the initramfs (deps resolved)
#   DRIVEWATCH_BIN optional binary copied to /usr/bin/drivewatch (+ its libraries)
#   DW_VM_EXTRA_FILES  optional "host_path:guest_path ..." list of extra files
#   DW_VM_EXTRA_BINS   optional "host_path:guest_path ..." list of binaries,
#                  copied with their shared libraries
#   DW_VM_BLKDEBUG  backing nodes (n0 n1 n2) to put blkdebug under
#   DW_VM_KEEP=1   keep the work dir (disks, sockets, initramfs)

DW_VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DW_VM_CACHE=${DW_VM_CACHE:-/var/cache/drivewatch-vm}
DW_VM_MEM=${DW_VM_MEM:-512M}
DW_VM_SMP=${DW_VM_SMP:-1}
# QEMU 7.2's TCG (Debian 12) drops a guest's memory barriers (mfence and
# the like) when the machine can never have more than one CPU: it emits
# them only for a "parallel" machine, max_cpus > 1 (upstream emits them
# always since a 2023 change, "tcg: Always emit barriers for system mode": I/O
# threads run beside even one vCPU). The guest's NVMe driver needs them:
# with the shadow doorbell buffer it writes the new submission queue tail
# to memory, then (after a full barrier) reads the controller's event
# index to decide whether to ring the doorbell register. QEMU's NVMe code
# does the mirror image (event index, barrier, tail) in its own thread.
# Without the guest's barrier both can miss the other's write: the guest
# skips the doorbell, QEMU never looks at the tail again, and the queue
# stands still until the driver's 30 s timeout ("I/O ... QID 1 timeout,
# aborting"). vm_aging's fill hit that about once in 20 runs (its S3 QEMU
# trace: the last sqid 1 doorbell, then 19 writes in flight and nothing on
# sqid 1 until the aborts). One online CPU and a second slot: the guest
# runs as before (one CPU online), and TCG keeps its barriers.
DW_VM_MAXCPUS=${DW_VM_MAXCPUS:-2}
((DW_VM_MAXCPUS >= DW_VM_SMP)) || DW_VM_MAXCPUS=$DW_VM_SMP
DW_VM_TIMEOUT=${DW_VM_TIMEOUT:-300}
DW_VM_GUEST_PORT=${DW_VM_GUEST_PORT:-9647}
DW_VM_NIC=${DW_VM_NIC:-virtio}
DW_VM_QEMU=${DW_VM_QEMU:-qemu-system-x86_64}

# NVMe stack in the order the kernel needs it (deps are resolved anyway).
DW_VM_NVME_MODULES="crct10dif_common crc64 crc-t10dif crc64-rocksoft t10-pi nvme-core nvme"
# shellcheck disable=SC2034 # used via ${!nicmods}
DW_VM_NET_MODULES_virtio="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net"
# shellcheck disable=SC2034
DW_VM_NET_MODULES_e1000="e1000"

# ---------------------------------------------------------------- basics

# vm_priority: under scripts/test.sh (and tests/tools/repeat.sh) ctest runs
# the other tests 5 niceness steps below the niceness those scripts run at,
# DW_VM_NICE; a scenario takes that niceness back (renice as root, which
# the scenarios need anyway), for itself, QEMU, Prometheus and its polls.
# A TCG guest starved by the tests ctest -j runs beside it stretched its
# boot past its deadlines; what a scenario times is the guest's, not theirs.
vm_priority() {
	[[ -n ${DW_VM_NICE:-} ]] || return 0
	renice -n "$DW_VM_NICE" -p $$ >/dev/null 2>&1 || dw_log "renice to $DW_VM_NICE failed; running at $(nice)"
}

dw_log() { printf '[dwvm %s] %s\n' "$(date +%T)" "$*" >&2; }

# dw_die STEP MESSAGE...: fail loudly, naming the step.
dw_die() {
	local step=$1
	shift
	printf '[dwvm] FAILED at step "%s": %s\n' "$step" "$*" >&2
	return 1
}

dw_now() { date +%s.%N; }
dw_elapsed() { awk -v a="$1" -v b="$(dw_now)" 'BEGIN{printf "%.2f", b-a}'; }

# Debian's python3 when there (see scripts/python.sh: a wrapper earlier in
# PATH can cost most of a second a start, and the polls here start it often).
dw_python() {
	if [[ -x /usr/bin/python3 ]]; then
		/usr/bin/python3 "$@"
	elif command -v python3 >/dev/null; then
		python3 "$@"
	else
		dw_die python "python3 not found"
	fi
}

# dw_need_pkgs PKG...: install missing Debian packages (no recommends).
# Fast (one dpkg-query) when everything is present.
dw_need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	dw_log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; then
		dw_log "apt-get install failed, running apt-get update once"
		apt-get update >/dev/null || dw_die packages "apt-get update failed" || return 1
		apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null ||
			dw_die packages "apt-get install ${missing[*]} failed" || return 1
	fi
}

# dw_free_port: a TCP port free on 127.0.0.1 right now.
dw_free_port() { dw_python "$DW_VM_DIR/vmctl.py" freeport; }

# ---------------------------------------------------------------- kernel

# vm_kernel_version: print the kernel ABI to use (e.g. 6.1.0-57-amd64).
vm_kernel_version() {
	if [[ -n ${DW_VM_KVER:-} ]]; then
		echo "$DW_VM_KVER"
		return
	fi
	local v
	v=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\(6\.1\.[0-9.-]*-amd64\)$/\1/p' | head -n1)
	if [[ -z $v ]]; then
		apt-get update >/dev/null 2>&1 || true
		v=$(apt-cache depends linux-image-amd64 2>/dev/null |
			sed -n 's/^ *Depends: linux-image-\(6\.1\.[0-9.-]*-amd64\)$/\1/p' | head -n1)
	fi
	if [[ -z $v ]]; then
		# Offline: newest kernel already in the cache.
		v=$(ls -1 "$DW_VM_CACHE/kernel" 2>/dev/null | sort -V | tail -n1)
	fi
	[[ -n $v ]] || { dw_die kernel "cannot determine the Debian 6.1 kernel version (apt-cache depends linux-image-amd64)"; return 1; }
	echo "$v"
}

# vm_fetch_kernel: make sure the kernel is in the cache; sets DW_VM_KVER,
# DW_VM_KERNEL (vmlinuz) and DW_VM_MODDIR (/lib/modules/<ver> tree).
vm_fetch_kernel() {
	local kver dir tmp deb attempt fixed=${DW_VM_KVER:-}
	kver=$(vm_kernel_version) || return 1
	dir=$DW_VM_CACHE/kernel/$kver
	if [[ ! -f $dir/.complete ]]; then
		dw_log "fetching linux-image-$kver into $dir"
		mkdir -p "$DW_VM_CACHE/kernel" || { dw_die kernel "cannot create $DW_VM_CACHE"; return 1; }
		# leftovers of interrupted runs
		find "$DW_VM_CACHE/kernel" -maxdepth 1 -name '.tmp.*' -mmin +60 -exec rm -rf {} + 2>/dev/null || true
		tmp=$(mktemp -d "$DW_VM_CACHE/kernel/.tmp.XXXXXX")
		for attempt in 1 2; do
			(cd "$tmp" && apt-get download -o APT::Sandbox::User=root "linux-image-$kver" >/dev/null 2>"$tmp/apt.err") && break
			if ((attempt == 2)) || [[ -n $fixed ]]; then
				dw_die kernel "apt-get download linux-image-$kver failed: $(tail -n 2 "$tmp/apt.err")"
				rm -rf "$tmp"
				return 1
			fi
			# Stale package lists: security updates remove the old kernel
			# from the mirror.  Refresh and re-resolve once.
			dw_log "apt-get download failed; apt-get update and retry"
			apt-get update >/dev/null 2>&1 || true
			DW_VM_KVER=
			kver=$(vm_kernel_version) || { rm -rf "$tmp"; return 1; }
			dir=$DW_VM_CACHE/kernel/$kver
			[[ -f $dir/.complete ]] && break
		done
		if [[ ! -f $dir/.complete ]]; then
			deb=$(ls "$tmp"/linux-image-"$kver"_*.deb)
			dpkg-deb -x "$deb" "$tmp/root" || { rm -rf "$tmp"; dw_die kernel "dpkg-deb -x $deb failed"; return 1; }
			rm -f "$deb"
			[[ -f $tmp/root/boot/vmlinuz-$kver && -d $tmp/root/lib/modules/$kver ]] ||
				{ rm -rf "$tmp"; dw_die kernel "package layout unexpected (no boot/vmlinuz-$kver or lib/modules/$kver)"; return 1; }
			touch "$tmp/root/.complete"
			# Atomic publish; a concurrent run may have won the race.
			if ! mv -T "$tmp/root" "$dir" 2>/dev/null && [[ ! -f $dir/.complete ]]; then
				rm -rf "$dir"
				mv -T "$tmp/root" "$dir" || { rm -rf "$tmp"; dw_die kernel "cannot move kernel into $dir"; return 1; }
			fi
		fi
		rm -rf "$tmp"
	fi
	DW_VM_KVER=$kver
	DW_VM_KERNEL=$dir/boot/vmlinuz-$kver
	DW_VM_MODDIR=$dir/lib/modules/$kver
}

# Decompressed contents of a module file (.ko, .ko.xz, .ko.zst, .ko.gz).
_dw_ko_cat() {
	case $1 in
	*.ko) cat "$1" ;;
	*.ko.xz) xz -dc "$1" ;;
	*.ko.zst) zstd -dcq "$1" ;;
	*.ko.gz) gzip -dc "$1" ;;
	*) return 1 ;;
	esac
}

# vm_resolve_modules NAME...: print module paths (relative to DW_VM_MODDIR)
# in load order, dependencies first.  Reads depends= from each module's
# .modinfo, so it needs no modules.dep (Debian ships none; depmod runs in
# the postinst) and no kmod.  '-' and '_' are equivalent in names.
vm_resolve_modules() {
	local -A path=() seen=()
	local -a order=()
	local f base
	while IFS= read -r f; do
		base=${f##*/}
		base=${base%%.ko*}
		path[${base//-/_}]=$f
	done < <(cd "$DW_VM_MODDIR" && find kernel -name '*.ko*')
	_dw_visit() {
		local n=${1//-/_} d deps
		[[ -n ${seen[$n]:-} ]] && return 0
		seen[$n]=1
		if [[ -z ${path[$n]:-} ]]; then
			if grep -qE "/${n//_/[-_]}\.ko" "$DW_VM_MODDIR/modules.builtin" 2>/dev/null; then
				return 0 # built into the kernel
			fi
			dw_die modules "module $1 not found under $DW_VM_MODDIR"
			return 1
		fi
		deps=$(_dw_ko_cat "$DW_VM_MODDIR/${path[$n]}" | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n1)
		for d in ${deps//,/ }; do
			_dw_visit "$d" || return 1
		done
		order+=("${path[$n]}")
	}
	for f in "$@"; do
		_dw_visit "$f" || return 1
	done
	printf '%s\n' "${order[@]}"
}

# _dw_copy_with_libs SRC DEST_ROOT DEST_PATH: copy a dynamic binary and all
# the shared libraries ldd reports (including the dynamic loader).
_dw_copy_with_libs() {
	local src=$1 root=$2 dst=$3 lib
	install -D -m 0755 "$src" "$root$dst" || return 1
	if ! ldd "$src" >/dev/null 2>&1; then
		return 0 # static binary
	fi
	while IFS= read -r lib; do
		[[ -n $lib && -e $lib ]] || continue
		[[ -e $root$lib ]] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib" || return 1
	done < <(ldd "$src" | awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]*ld-linux/{print $1}')
	if ldd "$src" | grep -q 'not found'; then
		dw_die initramfs "$src has unresolved libraries: $(ldd "$src" | grep 'not found' | tr '\n' ' ')"
		return 1
	fi
}

# vm_build_initramfs OUT.cpio.gz [SCENARIO_SCRIPT] [SERVICE_FRAGMENT]
# SCENARIO_SCRIPT: guest script sourced by /init after NVMe and network are
#   up (busybox ash; /etc/dwvm/lib.sh helpers are available).
# SERVICE_FRAGMENT: shell text the scenario starts with dw_service_start,
#   e.g. 'exec drivewatch --config /etc/drivewatch.toml'.
vm_build_initramfs() {
	local out=$1 scenario=${2:-} service=${3:-} stage m a t0
	t0=$(dw_now)
	[[ -n ${DW_VM_MODDIR:-} ]] || vm_fetch_kernel || return 1
	stage=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-initrd.XXXXXX")
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,etc/dwvm,lib/modules/dwvm,proc,sys,dev,tmp,run,root,var,www}
	# busybox-static and its applets
	install -m 0755 /bin/busybox "$stage/bin/busybox" || { dw_die initramfs "no /bin/busybox (busybox-static)"; return 1; }
	# One process for the ~270 links: a loop of ln took 10 s of each
	# scenario's start on a loaded host.
	/bin/busybox --list | dw_python -c '
import os, sys
for a in sys.stdin.read().split():
    if a != "busybox":
        os.symlink("busybox", os.path.join(sys.argv[1], a))' "$stage/bin" ||
		{ dw_die initramfs "busybox applet links"; return 1; }
	# nvme-cli with its libraries
	_dw_copy_with_libs /usr/sbin/nvme "$stage" /usr/sbin/nvme || { dw_die initramfs "copying nvme-cli"; return 1; }
	# drivewatch, if built
	if [[ -n ${DRIVEWATCH_BIN:-} ]]; then
		[[ -x $DRIVEWATCH_BIN ]] || { dw_die initramfs "DRIVEWATCH_BIN=$DRIVEWATCH_BIN is not an executable"; return 1; }
		_dw_copy_with_libs "$DRIVEWATCH_BIN" "$stage" /usr/bin/drivewatch || { dw_die initramfs "copying drivewatch"; return 1; }
		# Without its debug information: the build's binary is about
		# 120 MB with it, 10 without, and compressing it here and
		# unpacking it in the TCG guest took most of each boot (36 s and
		# 37 s of a 110 s boot on a loaded host).
		strip --strip-debug "$stage/usr/bin/drivewatch" || { dw_die initramfs "strip drivewatch"; return 1; }
	fi
	local pair
	for pair in ${DW_VM_EXTRA_FILES:-}; do
		install -D -m 0755 "${pair%%:*}" "$stage${pair#*:}" || { dw_die initramfs "extra file $pair"; return 1; }
	done
	# Binaries a scenario adds with their shared libraries ("SRC:DEST ...",
	# e.g. fio for the aging scenario's side-by-side run).
	for pair in ${DW_VM_EXTRA_BINS:-}; do
		_dw_copy_with_libs "${pair%%:*}" "$stage" "${pair#*:}" || { dw_die initramfs "extra binary $pair"; return 1; }
	done
	# kernel modules
	local nicmods=DW_VM_NET_MODULES_$DW_VM_NIC
	local mods
	# shellcheck disable=SC2086
	mods=$(vm_resolve_modules $DW_VM_NVME_MODULES ${!nicmods} ${DW_VM_EXTRA_MODULES:-}) ||
		{ rm -rf "$stage"; return 1; }
	: >"$stage/lib/modules/dwvm/order"
	for m in $mods; do
		a=$(basename "${m%%.ko*}").ko
		_dw_ko_cat "$DW_VM_MODDIR/$m" >"$stage/lib/modules/dwvm/$a" ||
			{ rm -rf "$stage"; dw_die initramfs "decompressing $m"; return 1; }
		echo "$a" >>"$stage/lib/modules/dwvm/order"
	done
	# init and scenario
	install -m 0755 "$DW_VM_DIR/guest/init" "$stage/init"
	install -m 0644 "$DW_VM_DIR/guest/lib.sh" "$stage/etc/dwvm/lib.sh"
	if [[ -n $scenario ]]; then
		install -m 0644 "$scenario" "$stage/etc/dwvm/scenario.sh" || { dw_die initramfs "scenario $scenario"; return 1; }
	fi
	printf '%s\n' "$service" >"$stage/etc/dwvm/service.sh"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
	printf 'root:x:0:\n' >"$stage/etc/group"
	printf '127.0.0.1 localhost\n' >"$stage/etc/hosts"
	mkdir -p "$(dirname "$out")"
	(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet | gzip -1 >"$out") ||
		{ rm -rf "$stage"; dw_die initramfs "cpio/gzip into $out failed"; return 1; }
	rm -rf "$stage"
	dw_log "initramfs $out ($(du -h "$out" | cut -f1), $(dw_elapsed "$t0") s)"
}

# vm_prepare [with-prometheus]: host packages and the cached kernel.
vm_prepare() {
	local pkgs=(qemu-system-x86 busybox-static nvme-cli cpio gzip curl)
	[[ ${1:-} == with-prometheus ]] && pkgs+=(prometheus)
	dw_need_pkgs "${pkgs[@]}" || return 1
	command -v python3 >/dev/null || dw_need_pkgs python3 || return 1
	vm_fetch_kernel
}

# ---------------------------------------------------------------- QEMU

# vm_disks WORKDIR: create the sparse backing images and set DW_VM_DEVICE_ARGS.
# Topology (ids are QOM ids under /machine/peripheral/):
#   c0  serial DWSN0001, one namespace  (drive n0, 128 MiB, 512 B blocks)
#   c1  serial DWSN0002, two namespaces (nsid 1: drive n1, 64 MiB, 512 B;
#                                        nsid 2: drive n2, 64 MiB, 4096 B)
# Backing nodes use -blockdev so that they survive device_del of a
# controller (a legacy -drive is auto-deleted with its device) and the
# controller can be re-plugged with vm_qmp device_add ... drive=n0.
vm_disks() {
	local w=$1 n
	for n in n0:128M n1:64M n2:64M; do
		truncate -s "${n#*:}" "$w/${n%%:*}.img" || { dw_die disks "truncate $w/${n%%:*}.img"; return 1; }
	done
	DW_VM_DEVICE_ARGS=()
	local file
	for n in n0 n1 n2; do
		DW_VM_DEVICE_ARGS+=(-blockdev "driver=file,filename=$w/$n.img,node-name=$n-file,discard=unmap")
		file=$n-file
		# A blkdebug layer between the image and the format: its "break"
		# (qemu-io over QMP human-monitor-command) holds the next request
		# of an event in QEMU until "resume".
		if [[ " ${DW_VM_BLKDEBUG:-} " == *" $n "* ]]; then
			DW_VM_DEVICE_ARGS+=(-blockdev "driver=blkdebug,image=$n-file,node-name=$n-dbg")
			file=$n-dbg
		fi
		DW_VM_DEVICE_ARGS+=(-blockdev "driver=raw,file=$file,node-name=$n,discard=unmap")
	done
	DW_VM_DEVICE_ARGS+=(
		-device "nvme,id=c0,serial=DWSN0001,drive=n0"
		-device "nvme,id=c1,serial=DWSN0002"
		-device "nvme-ns,id=c1n1,bus=c1,drive=n1,nsid=1"
		-device "nvme-ns,id=c1n2,bus=c1,drive=n2,nsid=2,logical_block_size=4096,physical_block_size=4096"
	)
	DW_VM_NCTRL=2
	DW_VM_NNS=3
}

# vm_start OUTDIR INITRD [EXTRA_QEMU_ARGS...]: boot in the background.
# Sets VM_PID VM_WORK VM_LOG VM_QMP VM_CTL VM_HOSTPORT VM_T0.
# OUTDIR receives console.log, qemu.stderr and qemu.cmdline.
vm_start() {
	local out=$1 initrd=$2
	shift 2
	if vm_running; then
		dw_die vm_start "a VM (pid $VM_PID) is already running; call vm_stop first"
		return 1
	fi
	vm_stop # removes the previous VM's work dir
	[[ -n ${DW_VM_KERNEL:-} ]] || vm_fetch_kernel || return 1
	mkdir -p "$out" || { dw_die vm_start "cannot create $out"; return 1; }
	VM_OUT=$(cd "$out" && pwd)
	VM_WORK=$(mktemp -d /tmp/dwvm.XXXXXX) # short: unix socket paths max 107 bytes
	VM_LOG=$VM_OUT/console.log
	VM_QMP=$VM_WORK/qmp.sock
	VM_CTL=$VM_WORK/ctl.sock
	: >"$VM_LOG"
	vm_disks "$VM_WORK" || return 1
	VM_HOSTPORT=${DW_VM_HOSTPORT:-$(dw_free_port)} || return 1
	local nic=virtio-net-pci
	[[ $DW_VM_NIC == e1000 ]] && nic=e1000
	local -a cmd=(
		"$DW_VM_QEMU" -machine pc -accel tcg -cpu max -smp "$DW_VM_SMP,maxcpus=$DW_VM_MAXCPUS" -m "$DW_VM_MEM"
		-nodefaults -no-user-config -nographic -no-reboot -vga none -monitor none
		-kernel "$DW_VM_KERNEL" -initrd "$initrd"
		-append "console=ttyS0 panic=-1 quiet DWVM_NCTRL=$DW_VM_NCTRL DWVM_NNS=$DW_VM_NNS DWVM_PORT=$DW_VM_GUEST_PORT ${DW_VM_APPEND:-}"
		-serial "file:$VM_LOG"
		-chardev "socket,id=ctl,path=$VM_CTL,server=on,wait=off"
		-device "isa-serial,chardev=ctl"
		-qmp "unix:$VM_QMP,server=on,wait=off"
		-netdev "user,id=net0,restrict=${DW_VM_NET_RESTRICT:-on},hostfwd=tcp:127.0.0.1:$VM_HOSTPORT-:$DW_VM_GUEST_PORT${DW_VM_NETDEV_EXTRA:-}"
		-device "$nic,netdev=net0,romfile="
		"${DW_VM_DEVICE_ARGS[@]}"
		"$@"
	)
	printf '%q ' "${cmd[@]}" >"$VM_OUT/qemu.cmdline"
	echo >>"$VM_OUT/qemu.cmdline"
	VM_T0=$(dw_now)
	timeout -k 5 "$DW_VM_TIMEOUT" "${cmd[@]}" </dev/null >"$VM_OUT/qemu.stdout" 2>"$VM_OUT/qemu.stderr" &
	VM_PID=$!
	dw_log "QEMU pid $VM_PID, guest :$DW_VM_GUEST_PORT -> 127.0.0.1:$VM_HOSTPORT, log $VM_LOG (deadline ${DW_VM_TIMEOUT}s)"
}

vm_running() { [[ -n ${VM_PID:-} ]] && kill -0 "$VM_PID" 2>/dev/null; }

# vm_markers [LOG]: all complete marker lines, cleaned ("DWVM-MARK: ...").
# Complete console lines end in \r\n; requiring the \r skips a line the
# UART is still writing.  Anything before "DWVM-MARK:" on a line (terminal
# escapes, a kernel message) is dropped.
# shellcheck disable=SC2120
vm_markers() {
	grep -a 'DWVM-MARK: ' "${1:-$VM_LOG}" 2>/dev/null | grep -a "$(printf '\r')" |
		sed 's/.*DWVM-MARK: /DWVM-MARK: /' | tr -d '\r' || true
}

_dw_marker_line() { # _dw_marker_line NAME [NTH]
	vm_markers | grep -a -E "^DWVM-MARK: $1( |\$)" | sed -n "${2:-1}p" || true
}

# vm_wait_marker NAME TIMEOUT_S [NTH]: wait for the NTH (default first)
# "DWVM-MARK: NAME [value]" line on the console and print its value.
# Fails early when the guest reports "DWVM-MARK: fail ..." or QEMU exits.
vm_wait_marker() {
	local name=$1 to=${2:-60} nth=${3:-1} end line f
	end=$(($(date +%s) + to))
	while :; do
		line=$(_dw_marker_line "$name" "$nth")
		if [[ -n $line ]]; then
			line=${line#"DWVM-MARK: $name"}
			echo "${line# }"
			return 0
		fi
		f=$(_dw_marker_line fail)
		if [[ -n $f && $name != fail ]]; then
			dw_die "wait-marker $name" "guest reported: ${f#DWVM-MARK: fail }"
			return 1
		fi
		if ! vm_running; then
			dw_die "wait-marker $name" "QEMU exited before the marker (see $VM_LOG, $VM_OUT/qemu.stderr: $(head -c 300 "$VM_OUT/qemu.stderr" 2>/dev/null))"
			return 1
		fi
		if (($(date +%s) >= end)); then
			dw_die "wait-marker $name" "timeout after ${to}s; last console lines: $(tail -n 5 "$VM_LOG" | tr -d '\r' | tr '\n' '|')"
			return 1
		fi
		sleep 0.1
	done
}

# vm_qmp JSON [vmctl options]: one QMP command; prints the reply JSON.
# Options: --timeout S, --wait-event EVENT [--event-device ID].
vm_qmp() {
	dw_python "$DW_VM_DIR/vmctl.py" qmp "$VM_QMP" "$@" ||
		{ dw_die qmp "command $1 failed"; return 1; }
}

# vm_qom_set ID PROP VALUE: e.g. vm_qom_set c0 smart_critical_warning 4
vm_qom_set() {
	vm_qmp "{\"execute\":\"qom-set\",\"arguments\":{\"path\":\"/machine/peripheral/$1\",\"property\":\"$2\",\"value\":$3}}" >/dev/null
}

# vm_device_del ID [TIMEOUT_S]: hot-unplug and wait for DEVICE_DELETED
# (which needs the guest to acknowledge the ACPI eject).
vm_device_del() {
	vm_qmp "{\"execute\":\"device_del\",\"arguments\":{\"id\":\"$1\"}}" \
		--timeout "${2:-30}" --wait-event DEVICE_DELETED --event-device "$1" >/dev/null
}

# vm_device_add JSON_ARGS: e.g. vm_device_add '"driver":"nvme","id":"c0","serial":"DWSN0001","drive":"n0"'
vm_device_add() {
	vm_qmp "{\"execute\":\"device_add\",\"arguments\":{$1}}" >/dev/null
}

# vm_send LINE: write a line to the guest's control port (/dev/ttyS1),
# which guest scenarios read with dw_wait_host LINE.
vm_send() {
	_vm_send_once "$1" || return 1
	# The guest's dw_wait_host acknowledges a word with "got-host-WORD". A
	# line to the guest can get lost under load (a CI run's retention guest
	# waited 240 s for "verified" that the host had sent), so a word the
	# guest is waiting for is sent again every 3 s until acknowledged, for
	# up to 30 s; past that the caller's own wait reports the failure.
	# Each word is waited for once per boot, so a repeat is harmless: the
	# guest's next wait skips lines that are not its own word.
	local waits got tries=0
	waits=$(vm_markers | grep -a -c -E "^DWVM-MARK: wait-host-$1( |\$)" || true)
	((waits > 0)) || return 0
	while :; do
		got=$(vm_markers | grep -a -c -E "^DWVM-MARK: got-host-$1( |\$)" || true)
		((got >= waits)) && return 0
		((++tries > 60)) && return 0
		sleep 0.5
		if ((tries % 6 == 0)); then
			dw_log "vm_send: '$1' not acknowledged after $((tries / 2)) s; sending it again"
			_vm_send_once "$1" || return 1
		fi
	done
}

_vm_send_once() {
	dw_python "$DW_VM_DIR/vmctl.py" send "$VM_CTL" "$1" ||
		{ dw_die vm_send "writing '$1' to $VM_CTL"; return 1; }
}

# vm_wait_exit TIMEOUT_S: wait for the guest to power off; prints the
# wall time since vm_start.  Kills QEMU and fails on timeout.
vm_wait_exit() {
	local to=${1:-120} end
	end=$(($(date +%s) + to))
	while vm_running; do
		if (($(date +%s) >= end)); then
			dw_die wait-exit "guest did not power off within ${to}s; killing QEMU"
			vm_stop
			return 1
		fi
		sleep 0.1
	done
	wait "$VM_PID" 2>/dev/null || true
	VM_PID=
	VM_WALL=$(dw_elapsed "$VM_T0")
	echo "$VM_WALL"
}

# vm_stop: stop QEMU if still running (QMP quit, then TERM, then KILL) and
# remove the work dir unless DW_VM_KEEP=1.  Safe to call twice.
vm_stop() {
	if vm_running; then
		dw_python "$DW_VM_DIR/vmctl.py" qmp "$VM_QMP" '{"execute":"quit"}' --timeout 2 >/dev/null 2>&1 || true
		for _ in $(seq 20); do vm_running || break; sleep 0.1; done
		vm_running && kill -TERM "$VM_PID" 2>/dev/null
		for _ in $(seq 30); do vm_running || break; sleep 0.1; done
		vm_running && kill -KILL "$VM_PID" 2>/dev/null
		wait "$VM_PID" 2>/dev/null || true
	fi
	VM_PID=
	if [[ -n ${VM_WORK:-} && -d $VM_WORK && ${DW_VM_KEEP:-0} != 1 ]]; then
		rm -rf "$VM_WORK"
	fi
}

# vm_extract_files LOG DESTDIR [NAME...]: decode the DWVM-FILE blocks of the
# console log into DESTDIR (only the NAMEs given, or all), verifying size and
# sha256.  Prints the names.  Only complete blocks (with their END line)
# count, so this can run while the guest is still up; a name sent twice
# keeps its last copy.  Fails if a wanted NAME is missing.
vm_extract_files() {
	local log=$1 dest=$2 name size sum got bad=0
	shift 2
	local want=" $* "
	mkdir -p "$dest"
	local tmp
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/dwvm-x.XXXXXX")
	tr -d '\r' <"$log" | sed 's/.*\(DWVM-FILE-\)/\1/' | awk -v dir="$tmp" -v want="$want" '
		/^DWVM-FILE-BEGIN / { name=$2; if (name !~ /^[A-Za-z0-9._-]+$/ || (want != "  " && index(want, " " name " ") == 0)) { name=""; next }
		                      f=dir "/" name ".b64"; printf "" > f; meta=$2 " " $3 " " $4 " " ($5 == "" ? "plain" : $5); next }
		/^DWVM-FILE-END / { if (name != "" && $2 == name) { close(f); done[name]=meta } name=""; next }
		name != "" && /^[A-Za-z0-9+\/=]+$/ { print >> f }
		END { for (n in done) print done[n] > (dir "/index") }
	'
	[[ -f $tmp/index ]] || { rm -rf "$tmp"; dw_die extract "no complete DWVM-FILE blocks${*:+ named $*} in $log"; return 1; }
	local enc
	while read -r name size sum enc; do
		if [[ $enc == gzip ]]; then
			base64 -d "$tmp/$name.b64" 2>/dev/null | gzip -dc >"$dest/$name" 2>/dev/null
		else
			base64 -d "$tmp/$name.b64" >"$dest/$name" 2>/dev/null
		fi || {
			dw_log "extract: $name: base64/gzip decode failed"
			bad=1
			continue
		}
		got=$(sha256sum "$dest/$name" | cut -d' ' -f1)
		if [[ $got != "$sum" || $(stat -c %s "$dest/$name") != "$size" ]]; then
			dw_log "extract: $name: checksum/size mismatch (console corruption?)"
			bad=1
			continue
		fi
		echo "$name"
	done <"$tmp/index"
	for name in "$@"; do
		grep -q "^$name " "$tmp/index" || { dw_log "extract: $name: no complete block in $log"; bad=1; }
	done
	rm -rf "$tmp"
	((bad == 0)) || { dw_die extract "some files were missing or corrupted on the console"; return 1; }
}

# ---------------------------------------------------------------- Prometheus

# prom_start OUTDIR TARGET [INTERVAL]: run Prometheus on 127.0.0.1 (free
# port) scraping TARGET (host:port) every INTERVAL (1s).  Sets PROM_PID,
# PROM_URL.  Log in OUTDIR/prometheus.log, config in OUTDIR/prometheus.yml.
prom_start() {
	local out=$1 target=$2 interval=${3:-1s} port
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	port=$(dw_free_port) || return 1
	cat >"$out/prometheus.yml" <<EOF
global:
  scrape_interval: $interval
  scrape_timeout: $interval
  evaluation_interval: $interval
scrape_configs:
  - job_name: drivewatch
    static_configs:
      - targets: ['$target']
EOF
	rm -rf "$out/prom-data"
	timeout -k 5 "${DW_PROM_TIMEOUT:-$DW_VM_TIMEOUT}" prometheus \
		--config.file="$out/prometheus.yml" \
		--web.listen-address="127.0.0.1:$port" \
		--storage.tsdb.path="$out/prom-data" \
		--log.level=warn </dev/null >"$out/prometheus.log" 2>&1 &
	PROM_PID=$!
	PROM_URL=http://127.0.0.1:$port
	for _ in $(seq 100); do
		curl -fsS --max-time 1 "$PROM_URL/-/ready" >/dev/null 2>&1 && {
			dw_log "prometheus pid $PROM_PID at $PROM_URL scraping $target every $interval"
			return 0
		}
		kill -0 "$PROM_PID" 2>/dev/null || break
		sleep 0.1
	done
	dw_die prom_start "prometheus not ready: $(tail -n 5 "$out/prometheus.log")"
	prom_stop
	return 1
}

# prom_query EXPR: instant query, prints the API JSON.
prom_query() {
	curl -fsS --max-time 5 -G --data-urlencode "query=$1" "$PROM_URL/api/v1/query" ||
		{ dw_die prom_query "query '$1' failed"; return 1; }
}

# prom_value EXPR: value of the first sample of an instant query (or empty).
prom_value() {
	prom_query "$1" | dw_python "$DW_VM_DIR/vmctl.py" jsonpath data.result.0.value.1
}

# prom_wait_value EXPR WANT TIMEOUT_S: poll until prom_value EXPR == WANT.
prom_wait_value() {
	local expr=$1 want=$2 to=${3:-30} end v=
	end=$(($(date +%s) + to))
	while (($(date +%s) < end)); do
		v=$(prom_value "$expr" 2>/dev/null) || v=
		[[ $v == "$want" ]] && return 0
		sleep 0.2
	done
	dw_die prom_wait_value "$expr = '$v', wanted '$want' within ${to}s"
}

# prom_wait_up [TIMEOUT_S]: wait until the target is scraped successfully.
prom_wait_up() { prom_wait_value 'up{job="drivewatch"}' 1 "${1:-30}"; }

# prom_wait EXPR WANT TIMEOUT_S: poll (every 0.1 s, one python process)
# until every series of EXPR equals WANT (a number), or EXPR returns nothing
# if WANT is "absent".  Prints "SECONDS_WAITED values"; on timeout prints
# the last values to stderr and fails.
prom_wait() {
	dw_python "$DW_VM_DIR/vmctl.py" prom-wait "$PROM_URL" "$1" "$2" "$3"
}

# prom_first SELECTOR WANT SINCE: Prometheus timestamp (scrape time, Unix s)
# of the first raw sample of SELECTOR (one series) equal to WANT at or after
# SINCE; empty if none.  Measures when a change reached Prometheus without
# the polling delay.
prom_first() {
	dw_python "$DW_VM_DIR/vmctl.py" prom-first "$PROM_URL" "$1" "$2" "$3"
}

prom_stop() {
	if [[ -n ${PROM_PID:-} ]] && kill -0 "$PROM_PID" 2>/dev/null; then
		kill -TERM "$PROM_PID" 2>/dev/null
		local n=0
		while kill -0 "$PROM_PID" 2>/dev/null && ((n++ < 50)); do sleep 0.1; done
		kill -KILL "$PROM_PID" 2>/dev/null || true
		wait "$PROM_PID" 2>/dev/null || true
	fi
	PROM_PID=
}

# ---------------------------------------------------------------- drivewatch in the guest

# The guest config for drivewatch: short intervals so a test sees changes
# within seconds.  Installed as /etc/drivewatch/drivewatch.toml.
DW_VM_DRIVEWATCH_CONFIG=${DW_VM_DRIVEWATCH_CONFIG:-$DW_VM_DIR/guest/drivewatch.toml}
# What /etc/dwvm/service.sh runs (dw_service_start / dw_drivewatch_start in
# the guest): the daemon as root, on every IPv4 address, port DWVM_PORT.
# shellcheck disable=SC2016 # expanded in the guest
DW_VM_DRIVEWATCH_SERVICE='exec drivewatch --config.file=/etc/drivewatch/drivewatch.toml --web.listen-address=0.0.0.0:${DWVM_PORT:-9647}'

# vm_drivewatch_config OUT: write the guest config: DW_VM_DRIVEWATCH_CONFIG
# plus every fragment *.toml of DW_VM_DRIVEWATCH_FRAGMENTS (a directory,
# default guest/drivewatch.d; in name order) that this
# drivewatch knows.  drivewatch rejects unknown tables and keys, and probes
# land over time, so a fragment for a probe the binary does not have yet
# (check-config says "unknown") is skipped with a log line; any other
# check-config error fails.
vm_drivewatch_config() {
	local out=$1 frag err
	cp "$DW_VM_DRIVEWATCH_CONFIG" "$out" || return 1
	err=$("$DRIVEWATCH_BIN" check-config "$out" 2>&1) ||
		{ dw_die drivewatch "$DRIVEWATCH_BIN check-config $DW_VM_DRIVEWATCH_CONFIG: $err"; return 1; }
	for frag in "${DW_VM_DRIVEWATCH_FRAGMENTS:-$DW_VM_DIR/guest/drivewatch.d}"/*.toml; do
		[[ -f $frag ]] || continue
		cat "$out" "$frag" >"$out.try"
		if err=$("$DRIVEWATCH_BIN" check-config "$out.try" 2>&1); then
			mv "$out.try" "$out"
			dw_log "guest config: merged ${frag##*/}"
		elif [[ $err == *unknown* ]]; then
			dw_log "guest config: skipped ${frag##*/}, this drivewatch does not know it (${err##*: })"
		else
			rm -f "$out.try"
			dw_die drivewatch "guest config fragment $frag: $err"
			return 1
		fi
	done
	rm -f "$out.try"
}

# vm_boot_drivewatch OUTDIR INITRD GUEST_SCENARIO [EXTRA_QEMU_ARGS...]
# Boots a guest running the real drivewatch ($DRIVEWATCH_BIN and its shared
# libraries) as its daemon, with vm_drivewatch_config's config (a copy is
# kept as OUTDIR/drivewatch.toml), scraped every
# second by a real Prometheus on 127.0.0.1.  GUEST_SCENARIO must start the
# daemon with dw_drivewatch_start (guest/lib.sh) first.  Returns once
# Prometheus scraped the daemon (up == 1) and every controller the guest
# sees has a successful health probe run.  Sets what vm_start and
# prom_start set, plus DW_VM_SERIALS ("SERIAL=kernel_name ..." at boot) and
# DW_VM_BOOT_SECONDS.  The caller traps EXIT with vm_stop and prom_stop.
vm_boot_drivewatch() {
	local out=$1 initrd=$2 scenario=$3 t0 n line
	shift 3
	[[ -n ${DRIVEWATCH_BIN:-} && -x $DRIVEWATCH_BIN ]] ||
		{ dw_die drivewatch "DRIVEWATCH_BIN='${DRIVEWATCH_BIN:-}' is not an executable (build the drivewatch target)"; return 1; }
	mkdir -p "$out" || return 1
	vm_drivewatch_config "$out/drivewatch.toml" || return 1
	t0=$(dw_now)
	DW_VM_EXTRA_FILES="${DW_VM_EXTRA_FILES:-} $out/drivewatch.toml:/etc/drivewatch/drivewatch.toml" \
		vm_build_initramfs "$initrd" "$scenario" "$DW_VM_DRIVEWATCH_SERVICE" || return 1
	# shellcheck disable=SC2034 # for the caller
	DW_VM_INITRAMFS_SECONDS=$(dw_elapsed "$t0")
	vm_start "$out" "$initrd" "$@" || return 1
	# Prometheus first: its first scrape lands ~5 s after it starts.
	prom_start "$out" "127.0.0.1:$VM_HOSTPORT" 1s || return 1
	vm_wait_marker service-up 120 >/dev/null || return 1
	prom_wait_up 60 || return 1
	n=$(vm_wait_marker ctrl-count 10) || return 1
	DW_VM_SERIALS=
	for line in $(vm_markers | sed -n 's/^DWVM-MARK: ctrl \([^ ]*\) \([^ ]*\).*/\1=\2/p'); do
		DW_VM_SERIALS+="$line "
	done
	# Every controller the guest saw, probed successfully at least once.
	prom_wait 'count(drivewatch_probe_success{probe="health"} == 1)' "$n" 60 >/dev/null ||
		{ dw_die drivewatch "not all $n controllers have drivewatch_probe_success 1"; return 1; }
	DW_VM_BOOT_SECONDS=$(dw_elapsed "$VM_T0")
	dw_log "drivewatch up in the guest: ${DW_VM_SERIALS}(${DW_VM_BOOT_SECONDS}s after QEMU start)"
}

# ---------------------------------------------------------------- scenario assertions

# vm_assert_init NAME OUTDIR: start a scenario's record.  Creates OUTDIR,
# sets VM_ASSERT_NAME (the log tag) and VM_ASSERT_OUT (OUTDIR, absolute),
# empties OUTDIR/assertions.txt and OUTDIR/measurements.txt and VM_FAILED
# (the ids of the failed assertions).  Call it in the scenario's shell (not
# in $(...)): it sets globals.
vm_assert_init() {
	VM_ASSERT_NAME=$1
	mkdir -p "$2" && VM_ASSERT_OUT=$(cd "$2" && pwd) || { dw_die "$1" "cannot create $2"; return 1; }
	: >"$VM_ASSERT_OUT/assertions.txt"
	: >"$VM_ASSERT_OUT/measurements.txt"
	VM_FAILED=()
}

# vm_log TEXT...: a timestamped progress line on stderr, tagged with NAME.
vm_log() { printf '[%s %s] %s\n' "$VM_ASSERT_NAME" "$(date +%T)" "$*" >&2; }

# vm_pass ID TEXT: a passed assertion, into assertions.txt and the log.
vm_pass() {
	printf 'PASS %s: %s\n' "$1" "$2" >>"$VM_ASSERT_OUT/assertions.txt"
	vm_log "PASS $1: $2"
}

# vm_fail ID TEXT [DETAILS_FILE]: a failed assertion, into assertions.txt
# and on stderr (with DETAILS_FILE's lines indented, if it is not empty);
# ID goes into VM_FAILED.  The run goes on.
vm_fail() {
	local id=$1 text=$2 details=${3:-}
	{
		printf 'ASSERTION FAILED %s: %s\n' "$id" "$text"
		if [[ -n $details && -s $details ]]; then sed 's/^/    /' "$details"; fi
	} | tee -a "$VM_ASSERT_OUT/assertions.txt" >&2
	VM_FAILED+=("$id")
}

# vm_measure LABEL VALUE: a measurement, into measurements.txt and on stderr.
vm_measure() {
	printf '%-56s %s\n' "$1" "$2" | tee -a "$VM_ASSERT_OUT/measurements.txt" >&2
}

# vm_assert_result [NOUN]: the scenario's verdict: fails, listing
# VM_FAILED, if any assertion failed; else logs "all NOUNs passed".
# NOUN: check (default) or assertion.
vm_assert_result() {
	local noun=${1:-check}
	if ((${#VM_FAILED[@]})); then
		printf '[%s] %d %s(s) FAILED: %s\n' "$VM_ASSERT_NAME" "${#VM_FAILED[@]}" "$noun" "$(printf '%s; ' "${VM_FAILED[@]}")" >&2
		return 1
	fi
	vm_log "all ${noun}s passed ($VM_ASSERT_OUT/assertions.txt)"
}

# vm_boot_scenario DIR FRAGMENTS INITRD [EXTRA_QEMU_ARGS...]: vm_boot_drivewatch
# into VM_ASSERT_OUT with the scenario's DIR/drivewatch.toml, the fragments
# of DIR/FRAGMENTS (a missing directory: none) and the guest script
# DIR/guest.sh; measures the boot.  DW_VM_APPEND etc. pass through.
vm_boot_scenario() {
	local dir=$1 frags=$2 initrd=$3
	shift 3
	DW_VM_DRIVEWATCH_CONFIG=$dir/drivewatch.toml \
		DW_VM_DRIVEWATCH_FRAGMENTS=$dir/$frags \
		vm_boot_drivewatch "$VM_ASSERT_OUT" "$initrd" "$dir/guest.sh" "$@" || return 1
	vm_measure "QEMU start -> all drives probed in Prometheus (s)" "$DW_VM_BOOT_SECONDS"
}

# vm_guest_finish DONE_MARKER: the end of a guest that waits for "finish"
# (dw_wait_host finish) and then marks DONE_MARKER: send it, wait for the
# power-off, measure the wall time, decode the guest's files into
# VM_ASSERT_OUT/files (their names in files.list).
vm_guest_finish() {
	local wall
	vm_wait_marker wait-host-finish 60 >/dev/null
	vm_send finish
	vm_wait_marker "$1" 60 >/dev/null
	wall=$(vm_wait_exit 60)
	vm_measure "QEMU start -> exit (s)" "$wall"
	vm_extract_files "$VM_LOG" "$VM_ASSERT_OUT/files" >"$VM_ASSERT_OUT/files.list"
}
