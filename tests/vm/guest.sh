#!/bin/bash
# Runs inside the QEMU guest as PID 1 (after the initramfs switch_roots into the host's root,
# read-only over 9p with a tmpfs overlay). Argument: the plan file written by tests/vm/run.
# Starts each server under test in turn, mounts it with the kernel client for every requested
# version and transport, runs tests/vm/workload.py on each mount and prints one
#   RESULT server=S vers=V transport=T case=C status=PASS|FAIL|SKIP time=SECS reason=TEXT
# line per case on the console, then powers the guest off.
# The whole script is one function, read completely before it runs: edits to this file on the
# host while a guest runs it cannot derail that run.
main() {
PLAN=$1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb
set -u

say() { echo "RNFS-VM: $*"; }
power_off() {
	trap - EXIT
	sync
	say "powering off"
	echo o >/proc/sysrq-trigger
	sleep 60
}
trap power_off EXIT

# ---------------------------------------------------------------------------------------------
# the root: fresh tmpfs where the host's state would leak in (tests/vm/run refuses a checkout
# under any of these: keep its list in step)
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
for d in /tmp /run /var/tmp /var/lib/nfs /etc/exports.d /etc/nfs.conf.d /srv /mnt; do
	mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d"
done
chmod 1777 /tmp /var/tmp
mount -t configfs configfs /sys/kernel/config 2>/dev/null
# artifacts (workload logs, server logs, dmesg, captures) go to the host's run directory
OUT=/run/out
mkdir -p "$OUT"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out "$OUT" 2>/dev/null || OUT=
hostname rnfs-vm
echo "127.0.0.1 localhost rnfs-vm" >/etc/hosts
[ -f "$PLAN" ] || { say "plan $PLAN missing"; exit 1; }
# shellcheck disable=SC1090
. "$PLAN"
say "booted: kernel $(uname -r), $(nproc) cpus, plan $PLAN"
echo 4 >/proc/sys/kernel/printk # keep the console for errors (and our lines)

result() { # server vers transport case status time reason
	echo "RESULT server=$1 vers=$2 transport=$3 case=$4 status=$5 time=$6 reason=${7:--}"
}
all_cases() { # server vers transport status reason: one line for mount, every case, umount
	local c
	for c in mount ${WL_CASES//,/ } $ACL_ROW umount; do result "$1" "$2" "$3" "$c" "$4" 0 "$5"; done
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
dump() { # prefix file lines: show the tail of a log on the console as evidence
	[ -s "$2" ] && tail -n "${3:-40}" "$2" | sed "s/^/$1| /"
}
dmesg_tail() { dmesg | grep -v "drop_caches" | tail -n "$1" | sed "s/^/dmesg| /"; }
save() { # files...: copy to the host's run directory
	[ -n "$OUT" ] && cp -f "$@" "$OUT/" 2>/dev/null
	return 0
}

# ---------------------------------------------------------------------------------------------
# modules, network, RDMA
for m in nfsv3 nfsv4 veth; do
	modprobe "$m" || say "modprobe $m failed"
done
RDMA_OK=1 RDMA_WHY=
for m in rdma_rxe rdma_ucm rpcrdma; do
	if ! out=$(modprobe "$m" 2>&1); then RDMA_OK=0 RDMA_WHY="modprobe $m failed: $out"; fi
done

ip link set lo up
ip link add veth0 type veth peer name veth1
ip addr add "$ADDR/24" dev veth0
ip addr add "$PEER_ADDR/24" dev veth1
ip link set veth0 up
ip link set veth1 up
if [ "$RDMA_OK" = 1 ]; then
	if ! out=$(rdma link add rxe0 type rxe netdev veth0 2>&1); then
		RDMA_OK=0 RDMA_WHY="rdma link add rxe0 failed: $out"
	fi
fi
[ "$RDMA_OK" = 1 ] && say "rdma: $(rdma link show 2>&1 | tr '\n' ' ')"
[ "$RDMA_OK" = 1 ] || say "no RDMA: $RDMA_WHY"

SUBNET=${ADDR%.*}.0/24
MNT=/mnt/nfs
mkdir -p "$MNT"
rpcbind -w || say "rpcbind failed to start"
# NFSv3 mounts lock (no nolock): the client's lockd asks its status monitor to watch each
# server it locks on, and mount.nfs refuses a locking mount without one
NLM_STATD=0
start_statd() {
	[ "$NLM_STATD" = 1 ] && return 0
	mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak
	rpc.statd --no-notify || return 1
	NLM_STATD=1
}
start_statd || say "rpc.statd failed to start: NFSv3 mounts will fail"

# ---------------------------------------------------------------------------------------------
# servers: start/stop; each exports a fresh tmpfs at /srv/NAME
KNFSD_T0=0
start_knfsd() {
	modprobe nfsd || return 1
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	# v4 OPENs wait out the grace period: keep it short (10 s is the smallest nfsd takes)
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	# NFSv4 LOCK also waits for lockd's grace period (50 s by default), which starts with nfsd
	modprobe lockd && sysctl -qw fs.nfs.nlm_grace_period=10 || say "knfsd: cannot shorten lockd's grace"
	mkdir -p /var/lib/nfs/v4recovery /var/lib/nfs/sm /var/lib/nfs/sm.bak
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	: >/etc/nfs.conf # the host's settings stay out of the test
	mkdir -p /srv/knfsd && mount -t tmpfs -o mode=0777 tmpfs /srv/knfsd
	# fsid=0: /srv/knfsd is the NFSv4 pseudo root (the guest's / is an overlay, which knfsd
	# cannot export as the usual pseudo-file-system root), so v4 mounts name it "/"
	echo "/srv/knfsd $SUBNET(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports
	exportfs -ra || return 1
	rpc.mountd || return 1
	rpc.nfsd 8 || return 1
	if [ "$RDMA_OK" = 1 ]; then
		echo "rdma 20049" >/proc/fs/nfsd/portlist || say "knfsd: cannot listen on rdma 20049"
	fi
	KNFSD_T0=$(date +%s)
	# the reclaim case restarts knfsd (its state is in the kernel: stop and start the threads)
	cat >/run/knfsd-restart <<-EOF
		#!/bin/bash
		rpc.nfsd 0 && rpc.nfsd 8 || exit 1
		[ "$RDMA_OK" = 1 ] && { echo "rdma 20049" >/proc/fs/nfsd/portlist || exit 1; }
		echo "knfsd restarted"
	EOF
	chmod 755 /run/knfsd-restart
	# once the client has reclaimed, end the grace period as knfsd does by itself when its
	# client tracking (nfsdcld) knows every client reclaimed; without it a new OPEN waits
	# out the whole grace period with the client's growing back-off (about 40 s here)
	cat >/run/knfsd-reclaimed <<-EOF
		#!/bin/bash
		# reads Y once the grace period is over (writing then fails with EBUSY)
		[ "\$(cat /proc/fs/nfsd/v4_end_grace)" = Y ] || echo Y >/proc/fs/nfsd/v4_end_grace
	EOF
	chmod 755 /run/knfsd-reclaimed
	# a freshly booted guest has no client to wait for: end the first grace period at once,
	# as knfsd itself does when its client tracking database is empty (rnfsd does the same
	# with an empty state directory); otherwise the first LOCK waits ~40 s (grace + back-off)
	/run/knfsd-reclaimed || say "knfsd: cannot end the initial grace period"
	say "knfsd: versions $(cat /proc/fs/nfsd/versions), ports $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
}
stop_knfsd() {
	local p v
	rpc.nfsd 0
	exportfs -ua
	pkill -x rpc.mountd
	for _ in $(seq 50); do pgrep -x rpc.mountd >/dev/null || break; sleep 0.2; done
	pkill -9 -x rpc.mountd
	: >/etc/exports
	# registrations of a killed daemon would shadow the next server's
	for p in 100003 100005 100021 100227; do
		for v in 1 2 3 4; do rpcinfo -d "$p" "$v" 2>/dev/null; done
	done
	umount /srv/knfsd
}

RNFSD_PID=
RNFSD_LOG=/run/rnfsd.log
RNFSD_CLAIMS=$RNFSD_SUPPORTS
# Over TCP rnfsd runs in a network namespace of its own at PEER_ADDR: NFSv3 mounts lock
# (no nolock) through the client's lockd, which registers NLM with this guest's rpcbind, so a
# server sharing that rpcbind could not register its own (knfsd shares the kernel's lockd and
# runs at ADDR). Over RDMA it runs at ADDR as before: soft-RoCE does not reach a device in
# another namespace here (mounts fail with "Network is unreachable"), so NFSv3 mounts over RDMA
# are made without nolock but take no locks (NLM itself never travels over RDMA: the Linux
# client's lockd speaks TCP; the nlm case tests it).
RNFSD_NS=rnfs
RNFSD_NS_UP=0
RNFSD_IN_NS=1
rnfsd_ns() {
	[ "$RNFSD_NS_UP" = 1 ] && return 0
	ip netns add $RNFSD_NS && ip link set veth1 netns $RNFSD_NS &&
		ip netns exec $RNFSD_NS ip addr add "$PEER_ADDR/24" dev veth1 &&
		ip netns exec $RNFSD_NS ip link set veth1 up &&
		ip netns exec $RNFSD_NS ip link set lo up || return 1
	RNFSD_NS_UP=1
}
server_addr() { # server transport: the address its clients mount
	if [ "$1" = rnfsd ] && [ "$2" = tcp ]; then echo "$PEER_ADDR"; else echo "$ADDR"; fi
}
start_rnfsd() {
	[ -x "$RNFSD" ] || { say "rnfsd: $RNFSD is not an executable"; return 1; }
	local netns="" maddr=127.0.0.1
	if [ "$RNFSD_IN_NS" = 1 ]; then
		rnfsd_ns || { say "rnfsd: network namespace setup failed"; return 1; }
		netns="ip netns exec $RNFSD_NS" maddr=$PEER_ADDR
	fi
	RNFSD_METRICS=$maddr:9464
	# a fresh state directory each time: otherwise the clients recorded by the previous
	# combination would hold the new instance in its NFSv4 grace period for a lease
	RNFSD_STATE=$(mktemp -d /run/rnfsd-state.XXXX)
	mkdir -p /srv/rnfsd && mount -t tmpfs -o mode=0777 tmpfs /srv/rnfsd
	# fsid=0 as for knfsd: the export is the NFSv4 root, v4 mounts name it "/" (the nlm case's
	# second instance keeps the pseudo file system, mounted as /srv/rnfsd)
	echo "/srv/rnfsd $SUBNET(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/run/rnfsd.exports
	# descriptor limits: the kernel's defaults for a process outside systemd (soft 1024, hard
	# 4096) unless RNFSD_NOFILE=SOFT:HARD (systemd services get 1024:524288)
	# the launcher also restarts rnfsd after a SIGKILL (the reclaim case), with the same state
	cat >/run/rnfsd-launch <<-EOF
		#!/bin/bash
		$([ -n "$RNFSD_NOFILE" ] && echo "ulimit -H -n ${RNFSD_NOFILE#*:}; ulimit -S -n ${RNFSD_NOFILE%%:*}")
		exec $netns env $RNFSD_ENV "$RNFSD" --exports /run/rnfsd.exports \\
			--state-dir "$RNFSD_STATE" --listen 0.0.0.0:2049 --metrics $RNFSD_METRICS \\
			--lease-time 15 $RNFSD_ARGS >>"$RNFSD_LOG" 2>&1
	EOF
	cat >/run/rnfsd-restart <<-EOF
		#!/bin/bash
		# kill -9 rnfsd and start it again on the same state directory; waits until it is ready
		pid=\$(cat /run/rnfsd.pid)
		kill -9 "\$pid"
		for _ in \$(seq 300); do # until it is gone (a zombie holds no sockets)
			[ -e /proc/\$pid ] && [ "\$(awk '{print \$3}' /proc/\$pid/stat 2>/dev/null)" != Z ] || break
			sleep 0.1
		done
		n=\$(grep -c "rnfsd ready:" "$RNFSD_LOG")
		setsid /run/rnfsd-launch </dev/null &
		echo \$! >/run/rnfsd.pid
		for _ in \$(seq 600); do
			[ "\$(grep -c "rnfsd ready:" "$RNFSD_LOG")" -gt "\$n" ] && { echo "rnfsd restarted (pid \$(cat /run/rnfsd.pid))"; exit 0; }
			sleep 0.1
		done
		echo "rnfsd did not get ready after the restart"; tail -n 20 "$RNFSD_LOG"; exit 1
	EOF
	chmod 755 /run/rnfsd-launch /run/rnfsd-restart
	: >"$RNFSD_LOG"
	/run/rnfsd-launch &
	RNFSD_PID=$!
	echo "$RNFSD_PID" >/run/rnfsd.pid
	local i
	for i in $(seq 600); do
		grep -q "rnfsd ready:" "$RNFSD_LOG" && break
		kill -0 "$RNFSD_PID" 2>/dev/null || break
		sleep 0.2
	done
	if ! grep -q "rnfsd ready:" "$RNFSD_LOG"; then
		say "rnfsd did not get ready"
		dump "rnfsd.log" "$RNFSD_LOG"
		return 1
	fi
	say "$(grep -o 'rnfsd ready:.*' "$RNFSD_LOG" | head -1) (pid $RNFSD_PID)"
	# what rnfsd registered with rpcbind counts as claimed, like RNFSD_SUPPORTS
	local regs v
	regs=$(rpcinfo -p "$maddr" 2>/dev/null | awk '$1 == 100003 && $3 == "tcp" {print $2}' | sort -u)
	say "rnfsd registered NFS versions over tcp: $(echo $regs)"
	RNFSD_CLAIMS=$RNFSD_SUPPORTS
	for v in $regs; do
		case "$v" in
		3) RNFSD_CLAIMS="$RNFSD_CLAIMS tcp:3" ;;
		4) RNFSD_CLAIMS="$RNFSD_CLAIMS tcp:4.0 tcp:4.1 tcp:4.2" ;;
		esac
	done
	# an rdma:// listener in the ready line claims RDMA for the same versions
	if grep -q "rnfsd ready:.*rdma://" "$RNFSD_LOG"; then
		for v in $regs; do
			case "$v" in
			3) RNFSD_CLAIMS="$RNFSD_CLAIMS rdma:3" ;;
			4) RNFSD_CLAIMS="$RNFSD_CLAIMS rdma:4.0 rdma:4.1 rdma:4.2" ;;
			esac
		done
	fi
	say "rnfsd claims: $(echo $RNFSD_CLAIMS | tr ' ' '\n' | sort -u | tr '\n' ' ')"
}
stop_rnfsd() {
	[ -n "$RNFSD_PID" ] || return 0
	kill "$RNFSD_PID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$RNFSD_PID" 2>/dev/null || break; sleep 0.2; done
	kill -9 "$RNFSD_PID" 2>/dev/null
	wait "$RNFSD_PID" 2>/dev/null
	RNFSD_PID=
	save "$RNFSD_LOG"
	umount /srv/rnfsd
}

server_supports() { # server transport vers -> 0 when the server claims the combination
	[ "$1" = knfsd ] && return 0
	case " $RNFSD_CLAIMS " in *" $2:$3 "*) return 0 ;; esac
	return 1
}

unmount() {
	local t0 out
	t0=$(now)
	if out=$(timeout 120 umount "$MNT" 2>&1); then
		echo "PASS $(elapsed "$t0") -"
		return
	fi
	timeout 60 umount -f "$MNT" >/dev/null 2>&1 || umount -l "$MNT" >/dev/null 2>&1
	echo "FAIL $(elapsed "$t0") umount failed: $(echo "$out" | tr '\n' ' ')"
}

run_combo() { # server vers transport
	local s=$1 v=$2 t=$3 opts out t0 claimed=1 wl rc c st path addr
	addr=$(server_addr "$s" "$t")
	if [ "$t" = rdma ] && [ "$RDMA_OK" != 1 ]; then
		all_cases "$s" "$v" "$t" SKIP "RDMA unavailable in the guest: $RDMA_WHY"
		return
	fi
	server_supports "$s" "$t" "$v" || claimed=0
	opts="vers=$v,proto=$t"
	[ "$t" = rdma ] && opts="$opts,port=20049"
	if [ "$s" = knfsd ] && [ "$v" != 3 ]; then # wait out knfsd's v4 grace period
		while [ "$(date +%s)" -lt $((KNFSD_T0 + 12)) ]; do sleep 1; done
	fi
	rm -rf "/srv/$s/work"
	CAP_PID= # CAPTURE=1: tcpdump of the combination (tcp) into the host's run directory
	if [ "${CAPTURE:-0}" = 1 ] && [ -n "$OUT" ] && command -v tcpdump >/dev/null; then
		tcpdump -i any -s "${CAPTURE_SNAPLEN:-512}" -U -w "$OUT/$s-$v-$t.pcap" port 2049 2>/dev/null &
		CAP_PID=$!
		sleep 1
	fi
	path=/srv/$s
	[ "$v" != 3 ] && path=/ # both export /srv/NAME with fsid=0: the NFSv4 root
	say "mount $s vers=$v transport=$t: -o $opts $addr:$path"
	t0=$(now)
	if [ "$claimed" = 0 ]; then
		# not claimed by rnfsd (RNFSD_SUPPORTS): try once, briefly; a refusal is a SKIP
		if ! out=$(timeout 60 mount -t nfs -o "$opts,retry=0" "$addr:$path" "$MNT" 2>&1); then
			say "rnfsd refused vers=$v transport=$t: $(echo "$out" | tr '\n' ' ')"
			all_cases "$s" "$v" "$t" SKIP "not implemented in rnfsd"
			stop_capture
			return
		fi
		say "rnfsd answered vers=$v transport=$t though it does not claim it: running the cases"
	elif ! out=$(timeout 180 mount -t nfs -o "$opts" "$addr:$path" "$MNT" 2>&1); then
		all_cases "$s" "$v" "$t" FAIL "mount failed: $(echo "$out" | tr '\n' ' ')"
		dmesg_tail 20
		[ "$s" = rnfsd ] && dump "rnfsd.log" "$RNFSD_LOG" 20
		stop_capture
		return
	fi
	result "$s" "$v" "$t" mount PASS "$(elapsed "$t0")" "$(grep " $MNT " /proc/mounts | cut -d' ' -f4)"
	acl_case "$s" "$v" "$t"
	if [ -z "$WL_CASES" ]; then # only cases that run apart (nlm, pnfs, krb5) or before (acl)
		read -r st c out <<<"$(unmount)"
		result "$s" "$v" "$t" umount "$st" "$c" "$out"
		stop_capture
		return
	fi
	wl=/tmp/wl-$s-$v-$t
	local extra=(--vers "$v" --transport "$t" --restart-cmd "/run/$s-restart"
		--mount-source "$addr:$path" --mount-opts "$opts")
	[ "$s" = rnfsd ] && extra+=(--metrics-url "http://$RNFSD_METRICS/metrics")
	[ -x "/run/$s-reclaimed" ] && extra+=(--reclaimed-cmd "/run/$s-reclaimed")
	timeout -k 10 "$WORKLOAD_TIMEOUT" python3 "$REPO/tests/vm/workload.py" --dir "$MNT/work" \
		--label "server=$s vers=$v transport=$t" --cases "$WL_CASES" --seed "$SEED" \
		--tarball "$TARBALL" --log "$wl.log" "${extra[@]}" $WORKLOAD_ARGS | tee "$wl.out"
	rc=${PIPESTATUS[0]}
	[ "$s" = rnfsd ] && RNFSD_PID=$(cat /run/rnfsd.pid) # the reclaim case restarts it
	save "$wl.log" "$wl.out"
	for c in ${WL_CASES//,/ }; do # a case that printed nothing died with the workload
		grep -q " case=$c status=" "$wl.out" ||
			result "$s" "$v" "$t" "$c" FAIL 0 "no result: workload exited $rc ($([ "$rc" = 124 ] && echo "timed out after ${WORKLOAD_TIMEOUT}s" || echo crashed))"
	done
	if grep -q "status=FAIL" "$wl.out" || [ "$rc" != 0 ]; then
		dump "wl $s $v $t" "$wl.log" 60
		dmesg_tail 30
		[ "$s" = rnfsd ] && dump "rnfsd.log" "$RNFSD_LOG" 30
	fi
	if [ "$s" = rnfsd ] && [ -n "$RNFSD_PID" ]; then
		say "rnfsd: $(ls "/proc/$RNFSD_PID/fd" 2>/dev/null | wc -l) open descriptors," \
			"$(grep 'Max open files' "/proc/$RNFSD_PID/limits" | tr -s ' ')," \
			"$(grep VmRSS "/proc/$RNFSD_PID/status" | tr -s ' \t' ' ')"
	fi
	read -r st c out <<<"$(unmount)"
	result "$s" "$v" "$t" umount "$st" "$c" "$out"
	stop_capture
}
stop_capture() {
	[ -n "$CAP_PID" ] && { kill "$CAP_PID"; wait "$CAP_PID"; } 2>/dev/null
	CAP_PID=
	return 0
}

# ---------------------------------------------------------------------------------------------
# The "acl" case (docs/acl.md): POSIX ACLs through the kernel client on the combination's mount,
# before the workload (tests/vm/acl.py): setfacl and getfacl (the NFSACL protocol) on NFSv3,
# nfs4_setfacl and nfs4_getfacl (the acl attribute) on NFSv4, the export's ACLs read with
# getfacl directly in the guest, and four local users (made once per guest with useradd: the
# owner, a user named in the ACLs, a member of the group named in them, and another) reading,
# writing and creating as themselves. Both servers export a tmpfs (mode=0777, default options:
# POSIX ACLs on) with the same options. knfsd runs first: each rnfsd row also requires every
# observation to be the same as knfsd's of the same combination (/tmp/acl-knfsd-V-T.txt).
ACL_ROW=$(case ",$CASES," in *,acl,*) echo acl ;; esac)
ACL_OWNER=aclown:2200:2200
ACL_NAMED=aclnamed:2201:2201
ACL_MEMBER=aclmember:2202:2202:2210
ACL_OTHER=aclother:2203:2203
ACL_GROUP=aclgrp:2210
ACL_STATE=0 # 1 set up, 2 setup failed (ACL_WHY says why)
ACL_WHY=
acl_setup() { # once per guest: the tools, the users and the group
	[ "$ACL_STATE" = 1 ] && return 0
	[ "$ACL_STATE" = 2 ] && return 1
	ACL_STATE=2
	local p u name uid gid extra
	for p in setfacl getfacl nfs4_setfacl nfs4_getfacl useradd groupadd; do
		command -v $p >/dev/null ||
			{ ACL_WHY="$p missing (tests/vm/run installs acl nfs4-acl-tools passwd)"; return 1; }
	done
	if [ "$(getent group "${ACL_GROUP%%:*}" | cut -d: -f3)" != "${ACL_GROUP#*:}" ]; then
		groupadd -g "${ACL_GROUP#*:}" "${ACL_GROUP%%:*}" ||
			{ ACL_WHY="groupadd ${ACL_GROUP%%:*} failed"; return 1; }
	fi
	for u in $ACL_OWNER $ACL_NAMED $ACL_MEMBER $ACL_OTHER; do
		IFS=: read -r name uid gid extra <<<"$u"
		if [ "$(id -u "$name" 2>/dev/null)" != "$uid" ]; then
			groupadd -g "$gid" "$name" && useradd -u "$uid" -g "$gid" ${extra:+-G "$extra"} -M \
				-d /nonexistent -s /usr/sbin/nologin "$name" ||
				{ ACL_WHY="useradd $name ($uid) failed"; return 1; }
		fi
	done
	say "acl: users $(for u in $ACL_OWNER $ACL_NAMED $ACL_MEMBER $ACL_OTHER; do id "${u%%:*}"; done | tr '\n' ' ')"
	ACL_STATE=1
}
acl_case() { # server vers transport: the acl row, on the combination's mount at $MNT
	[ -n "$ACL_ROW" ] || return 0
	local s=$1 v=$2 t=$3 t0 out rc why ref= trans=/tmp/acl-$1-$2-$3.txt
	t0=$(now)
	if ! acl_setup; then
		result "$s" "$v" "$t" acl FAIL 0 "setup failed: $ACL_WHY"
		return
	fi
	[ "$s" = rnfsd ] && [ -s "/tmp/acl-knfsd-$v-$t.txt" ] && ref=/tmp/acl-knfsd-$v-$t.txt
	out=$(timeout -k 10 600 python3 "$REPO/tests/vm/acl.py" --dir "$MNT" --server-dir "/srv/$s" \
		--vers "$v" --tag "$v-$t" --owner $ACL_OWNER --named $ACL_NAMED --member $ACL_MEMBER \
		--other $ACL_OTHER --group $ACL_GROUP --transcript "$trans" ${ref:+--reference "$ref"} 2>&1)
	rc=$?
	echo "$out" | sed "s/^/acl $s $v $t| /"
	save "$trans"
	why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
	if [ "$rc" = 0 ] && [ -z "$why" ]; then
		result "$s" "$v" "$t" acl PASS "$(elapsed "$t0")" "-"
	else
		result "$s" "$v" "$t" acl FAIL "$(elapsed "$t0")" "${why:-acl.py exited $rc}"
		dmesg_tail 20
		[ "$s" = rnfsd ] && dump "rnfsd.log" "$RNFSD_LOG" 20
	fi
}

# ---------------------------------------------------------------------------------------------
# The "nlm" case: NFSv3 locks through the kernel client's lockd (tests/vm/locks.py), with a v3
# and a v4.2 mount of one export. It runs apart from the combination's mount.
WL_CASES=$(echo ",$CASES," | sed 's/,nlm,/,/; s/,pnfs,/,/; s/,krb5,/,/; s/,acl,/,/; s/,failover,/,/; s/,faults,/,/; s/,soak,/,/; s/^,//; s/,$//')
NLM_RC=1
NLM_INCREMENTS=${NLM_INCREMENTS:-2000}
nlm_result() { # server status time reason-file-or-text
	result "$1" 3 tcp nlm "$2" "$3" "$4"
}
nlm_run() { # server v3dir v3bdir v4dir restart-cmd: runs the cases, reports one result
	local s=$1 t0 out rc why wake=2
	# knfsd grants a blocked NLM request after an NFSv4 unlock, and at times after an NLM
	# unlock, only when the client retries (every 30 s; measured 27-31 s): its figures are
	# printed, not held to rnfsd's 2 s
	[ "$s" = knfsd ] && wake=40
	t0=$(now)
	out=$(timeout -k 10 900 python3 "$REPO/tests/vm/locks.py" --v3 "$2" --v3b "$3" --v4 "$4" \
		--wakeup $wake --increments "$NLM_INCREMENTS" ${5:+--restart-cmd "$5"} 2>&1)
	rc=$?
	NLM_RC=$rc
	echo "$out" | sed "s/^/nlm $s| /"
	if [ "$rc" = 0 ]; then
		nlm_result "$s" PASS "$(elapsed "$t0")" "-"
	else
		why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
		nlm_result "$s" FAIL "$(elapsed "$t0")" "${why:-locks.py exited $rc}"
	fi
}
# a v3 mount, a second v3 mount through another address of the server (nosharecache: its own
# lock manager host, so to the server another client) and a v4.2 mount
nlm_mounts() { # source-v3 source-v3b source-v4: mounts all three, or says why not
	mkdir -p /mnt/nlm3 /mnt/nlm3b /mnt/nlm4
	timeout 120 mount -t nfs -o vers=3,proto=tcp "$1" /mnt/nlm3 || return 1
	timeout 120 mount -t nfs -o vers=3,proto=tcp,nosharecache "$2" /mnt/nlm3b ||
		{ umount /mnt/nlm3; return 1; }
	timeout 120 mount -t nfs -o vers=4.2,proto=tcp "$3" /mnt/nlm4 ||
		{ umount /mnt/nlm3b /mnt/nlm3; return 1; }
}
nlm_umounts() {
	local m
	for m in /mnt/nlm4 /mnt/nlm3b /mnt/nlm3; do timeout 60 umount $m || umount -l $m; done
}
nlm_knfsd() {
	start_statd || { nlm_result knfsd FAIL 0 "rpc.statd did not start"; return; }
	while [ "$(date +%s)" -lt $((KNFSD_T0 + 12)) ]; do sleep 1; done
	mkdir -p /srv/knfsd/nlm && chmod 777 /srv/knfsd/nlm
	if ! nlm_mounts "$ADDR:/srv/knfsd" "$PEER_ADDR:/srv/knfsd" "$ADDR:/"; then
		nlm_result knfsd FAIL 0 "mount failed"
		return
	fi
	nlm_run knfsd /mnt/nlm3/nlm /mnt/nlm3b/nlm /mnt/nlm4/nlm
	nlm_umounts
}
# rnfsd: the client's lockd registers NLM with this guest's rpcbind, which would then send the
# client's NLM calls to it, not to rnfsd. So rnfsd runs in a network namespace of its own
# (serving its own port mapper there), reached over a veth pair: two hosts, as in production.
nlm_rnfsd() {
	local ns=rnfsnlm cli=10.99.0.1 srv=10.99.0.2 srv2=10.99.0.3 st=/run/rnfsd-nlm-state log=/run/rnfsd-nlm.log
	start_statd || { nlm_result rnfsd FAIL 0 "rpc.statd did not start"; return; }
	ip netns add $ns && ip link add vnlm0 type veth peer name vnlm1 &&
		ip link set vnlm1 netns $ns && ip addr add $cli/24 dev vnlm0 && ip link set vnlm0 up &&
		ip netns exec $ns ip addr add $srv/24 dev vnlm1 &&
		ip netns exec $ns ip addr add $srv2/24 dev vnlm1 &&
		ip netns exec $ns ip link set vnlm1 up && ip netns exec $ns ip link set lo up ||
		{ nlm_result rnfsd FAIL 0 "network namespace setup failed"; return; }
	mkdir -p "$st" /srv/rnfsd && mount -t tmpfs -o mode=0777 tmpfs /srv/rnfsd
	mkdir -p /srv/rnfsd/nlm && chmod 777 /srv/rnfsd/nlm
	echo "/srv/rnfsd 10.99.0.0/24(rw,no_root_squash,insecure)" >/run/rnfsd-nlm.exports
	cat >/run/rnfsd-nlm-launch <<-EOF
		#!/bin/bash
		exec ip netns exec $ns env $RNFSD_ENV "$RNFSD" --exports /run/rnfsd-nlm.exports \\
			--state-dir $st --listen 0.0.0.0:2049 --no-rdma --lease-time 15 >>$log 2>&1
	EOF
	cat >/run/rnfsd-nlm-restart <<-EOF
		#!/bin/bash
		pid=\$(cat /run/rnfsd-nlm.pid)
		kill -9 "\$pid"
		for _ in \$(seq 300); do # until it is gone (a zombie holds no sockets)
			[ -e /proc/\$pid ] && [ "\$(awk '{print \$3}' /proc/\$pid/stat 2>/dev/null)" != Z ] || break
			sleep 0.1
		done
		n=\$(grep -c "rnfsd ready:" $log)
		setsid /run/rnfsd-nlm-launch </dev/null &
		echo \$! >/run/rnfsd-nlm.pid
		for _ in \$(seq 600); do
			[ "\$(grep -c "rnfsd ready:" $log)" -gt "\$n" ] && exit 0
			sleep 0.1
		done
		echo "rnfsd did not get ready after the restart"; exit 1
	EOF
	chmod 755 /run/rnfsd-nlm-launch /run/rnfsd-nlm-restart
	: >$log
	setsid /run/rnfsd-nlm-launch </dev/null &
	echo $! >/run/rnfsd-nlm.pid
	for _ in $(seq 300); do grep -q "rnfsd ready:" $log && break; sleep 0.2; done
	say "nlm: $(grep -o 'rnfsd ready:.*' $log | head -1)"
	if nlm_mounts "$srv:/srv/rnfsd" "$srv2:/srv/rnfsd" "$srv:/srv/rnfsd"; then
		nlm_run rnfsd /mnt/nlm3/nlm /mnt/nlm3b/nlm /mnt/nlm4/nlm /run/rnfsd-nlm-restart
		nlm_umounts
	else
		nlm_result rnfsd FAIL 0 "mount failed"
	fi
	[ "$NLM_RC" = 0 ] || dump "rnfsd-nlm.log" $log 40
	kill "$(cat /run/rnfsd-nlm.pid)" 2>/dev/null
	sleep 1
	save $log
	umount /srv/rnfsd
	ip netns del $ns
}
nlm_case() { # server vers transport: the nlm result of a combination
	case ",$CASES," in *,nlm,*) ;; *) return 0 ;; esac
	if [ "$2" != 3 ] || [ "$3" != tcp ]; then
		result "$1" "$2" "$3" nlm SKIP 0 "NFSv3 locking: run with the vers=3 tcp combination"
		return 0
	fi
	"nlm_$1"
}

# ---------------------------------------------------------------------------------------------
# The "pnfs" case (docs/pnfs.md): rnfsd as pNFS metadata server (MDS) in a network namespace
# of its own, with three NFSv3 data servers (DSes) at the guest's address on that link: two
# rnfsd and knfsd. The kernel client mounts the MDS with vers=4.2; tests/vm/pnfs.py checks
# where the bytes go, then the workload's cases run on the mount.
PNFS_CASES=${PNFS_CASES-smoke,bigfile,files1000,rename,lsdir,symlink,hardlink,attrs,fsync,fsx,tar}
pnfs_case() { # server vers transport
	case ",$CASES," in *,pnfs,*) ;; *) return 0 ;; esac
	if [ "$1" != rnfsd ]; then
		result "$1" "$2" "$3" pnfs SKIP 0 "rnfsd as pNFS metadata server only"
		return 0
	fi
	if [ "$2" != 4.2 ] || [ "$3" != tcp ]; then
		result "$1" "$2" "$3" pnfs SKIP 0 "pNFS: run with the vers=4.2 tcp combination"
		return 0
	fi
	# the client and knfsd (the third DS) at $cli, the MDS at $mds in a namespace of its
	# own, the rnfsd DSes at addresses of their own on the client's side of the link
	local ns=rnfspnfs cli=10.98.0.1 mds=10.98.0.2 i t0 out rc why knfsd_mine=0 pids=""
	local dsa=("" 10.98.0.3 10.98.0.4)
	local mnt=/mnt/pnfs wl=/tmp/wl-pnfs
	t0=$(now)
	pnfs_fail() { result rnfsd 4.2 tcp pnfs FAIL "$(elapsed "$t0")" "$1"; }
	ip netns add $ns && ip link add vpn0 type veth peer name vpn1 &&
		ip link set vpn1 netns $ns && ip addr add $cli/24 dev vpn0 &&
		ip addr add ${dsa[1]}/24 dev vpn0 && ip addr add ${dsa[2]}/24 dev vpn0 && ip link set vpn0 up &&
		ip netns exec $ns ip addr add $mds/24 dev vpn1 &&
		ip netns exec $ns ip link set vpn1 up && ip netns exec $ns ip link set lo up ||
		{ pnfs_fail "network namespace setup failed"; return; }
	# knfsd: the third DS (its /srv/knfsd, exported to the MDS's link too)
	if ! pgrep -x nfsd >/dev/null; then
		start_knfsd >/dev/null || { pnfs_fail "knfsd did not start"; return; }
		knfsd_mine=1
	fi
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 10.98.0.0/24:/srv/knfsd ||
		{ pnfs_fail "exportfs for the MDS failed"; return; }
	# with soft-RoCE (PNFS_RDMA=0 turns it off) the second rnfsd DS also serves
	# RPC-over-RDMA on the MDS's link, advertised first in its device address, so the
	# client's DS traffic to it goes over RDMA (the rdma check), and rnfs-bench's too (bench)
	local ds_rdma=() ds2_spec=ds2=${dsa[2]}:2051:/srv/ds2 rdma_metrics=()
	if [ "${PNFS_RDMA:-1}" = 1 ] && [ "$RDMA_OK" = 1 ] &&
		rdma link add rxe1 type rxe netdev vpn0 >/dev/null 2>&1; then
		ds_rdma=(--rdma ${dsa[2]}:20051)
		ds2_spec=$ds2_spec,rdma=20051
		rdma_metrics=(--rdma-ds-metrics http://${dsa[2]}:9472/metrics)
	fi
	# the rnfsd DSes: /run/dsN-start (re)starts one and waits until it is ready,
	# /run/dsN-kill kills it with SIGKILL (the mirror check)
	for i in 1 2; do
		local transport="--no-rdma"
		[ "$i" = 2 ] && [ ${#ds_rdma[@]} -gt 0 ] && transport="${ds_rdma[*]}"
		mkdir -p /srv/ds$i /run/ds$i-state && mount -t tmpfs -o mode=0700 tmpfs /srv/ds$i
		echo "/srv/ds$i 10.98.0.0/24(rw,no_root_squash,sync)" >/run/ds$i.exports
		cat >/run/ds$i-start <<-EOF
			#!/bin/bash
			n=\$(grep -c "rnfsd ready:" /run/ds$i.log 2>/dev/null)
			setsid env $RNFSD_ENV "$RNFSD" --exports /run/ds$i.exports --listen ${dsa[i]}:$((2049 + i)) \\
				--no-portmap --no-nlm $transport --state-dir /run/ds$i-state \\
				--metrics ${dsa[i]}:$((9470 + i)) --admin-socket /run/ds$i.sock >>/run/ds$i.log 2>&1 </dev/null &
			echo \$! >/run/ds$i.pid
			for _ in \$(seq 300); do
				[ "\$(grep -c "rnfsd ready:" /run/ds$i.log)" -gt "\${n:-0}" ] && exit 0
				sleep 0.1
			done
			echo "DS $i did not get ready"; exit 1
		EOF
		printf '#!/bin/bash\nkill -9 "$(cat /run/ds%s.pid)"\n' $i >/run/ds$i-kill
		chmod 755 /run/ds$i-start /run/ds$i-kill
		: >/run/ds$i.log
		/run/ds$i-start >/dev/null &
	done
	mkdir -p /srv/mds /run/mds-state && mount -t tmpfs -o mode=0777 tmpfs /srv/mds
	echo "/srv/mds 10.98.0.0/24(rw,no_root_squash,insecure,fsid=0,pnfs)" >/run/mds.exports
	# the first MDS also serves NLM and a port mapper in the namespace: the v3 view locks
	setsid ip netns exec $ns env $RNFSD_ENV "$RNFSD" --exports /run/mds.exports \
		--listen 0.0.0.0:2049 --no-rdma --state-dir /run/mds-state \
		--admin-socket /run/mds.sock --metrics $mds:9464 --lease-time 15 \
		--pnfs-ds ds1=${dsa[1]}:2050:/srv/ds1 --pnfs-ds $ds2_spec \
		--pnfs-ds ds3=$cli:2049:/srv/knfsd >/run/mds.log 2>&1 </dev/null &
	pids="$pids $!"
	# a second MDS with two mirrors of each file on the rnfsd DSes (its DS files have a
	# name prefix of their own: the two MDSes leave each other's files alone)
	mkdir -p /srv/mds2 /run/mds2-state && mount -t tmpfs -o mode=0777 tmpfs /srv/mds2
	echo "/srv/mds2 10.98.0.0/24(rw,no_root_squash,insecure,fsid=0,pnfs)" >/run/mds2.exports
	setsid ip netns exec $ns env $RNFSD_ENV "$RNFSD" --exports /run/mds2.exports \
		--listen 0.0.0.0:2050 --no-portmap --no-nlm --no-rdma --state-dir /run/mds2-state \
		--admin-socket /run/mds2.sock --metrics $mds:9465 --lease-time 15 --pnfs-mirrors 2 \
		--pnfs-ds ds1=${dsa[1]}:2050:/srv/ds1 --pnfs-ds $ds2_spec \
		>/run/mds2.log 2>&1 </dev/null &
	pids="$pids $!"
	for _ in $(seq 300); do
		[ "$(cat /run/ds1.log /run/ds2.log /run/mds.log /run/mds2.log | grep -c 'rnfsd ready:')" = 4 ] && break
		sleep 0.2
	done
	say "pnfs: $(grep -ho 'rnfsd ready:.*' /run/ds1.log /run/ds2.log /run/mds.log /run/mds2.log | tr '\n' ' ')"
	mkdir -p $mnt $mnt-mirrors $mnt-v3
	if ! out=$(timeout 180 mount -t nfs -o vers=4.2,proto=tcp $mds:/ $mnt 2>&1) ||
		! out=$(timeout 180 mount -t nfs -o vers=4.2,proto=tcp,port=2050 $mds:/ $mnt-mirrors 2>&1) ||
		! out=$(timeout 180 mount -t nfs -o vers=3,proto=tcp,port=2049,mountport=2049 \
			$mds:/srv/mds $mnt-v3 2>&1); then
		pnfs_fail "mount failed: $(echo "$out" | tr '\n' ' ')"
		dump "mds.log" /run/mds.log 30
	else
		# PNFS_DEBUG=1: the kernel client's pNFS debugging messages into dmesg (saved)
		[ "${PNFS_DEBUG:-0}" = 1 ] && echo 0x3000 >/proc/sys/sunrpc/nfs_debug
		out=$(timeout -k 10 900 python3 "$REPO/tests/vm/pnfs.py" --mnt $mnt --mds-export /srv/mds \
			--ds /srv/ds1 --ds /srv/ds2 --ds /srv/knfsd --mib "${PNFS_MIB:-64}" \
			--v3-mnt $mnt-v3 --mirror-mnt $mnt-mirrors --mirror-ds /srv/ds1 --mirror-ds /srv/ds2 \
			--kill-ds-cmd /run/ds1-kill --start-ds-cmd /run/ds1-start "${rdma_metrics[@]}" \
			--bench "$REPO/target/release/rnfs-bench" --mds-addr $mds \
			--ds-metrics /srv/ds1=http://${dsa[1]}:9471/metrics \
			--ds-metrics /srv/ds2=http://${dsa[2]}:9472/metrics \
			--mds-metrics http://$mds:9464/metrics 2>&1)
		rc=$?
		echo 0 >/proc/sys/sunrpc/nfs_debug
		echo "$out" | sed "s/^/pnfs| /"
		why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
		# the workload's cases on the pNFS mount (PNFS_CASES="": none)
		: >$wl.out
		if [ -n "$PNFS_CASES" ]; then
			timeout -k 10 "$WORKLOAD_TIMEOUT" python3 "$REPO/tests/vm/workload.py" --dir $mnt/work \
				--label "server=rnfsd-pnfs vers=4.2 transport=tcp" --cases "$PNFS_CASES" \
				--seed "$SEED" --tarball "$TARBALL" --log $wl.log --vers 4.2 --transport tcp \
				$WORKLOAD_ARGS >$wl.out 2>&1
			sed "s/^/pnfs wl| /" $wl.out
			why="$why$(grep "status=FAIL" $wl.out | sed 's/.*case=\([^ ]*\).*reason=/workload \1: /' | tr '\n' ';')"
			grep -q "case=" $wl.out || why="${why}workload printed nothing;"
		fi
		if [ "$rc" = 0 ] && [ -z "$why" ]; then
			result rnfsd 4.2 tcp pnfs PASS "$(elapsed "$t0")" "-"
		else
			pnfs_fail "${why:-pnfs.py exited $rc}"
			dump "mds.log" /run/mds.log 40
			dump "wl pnfs" $wl.log 40
			dmesg_tail 30
		fi
		say "pnfs: DS files $(ls /srv/ds1 | wc -l) $(ls /srv/ds2 | wc -l) $(ls /srv/knfsd | wc -l)"
	fi
	for m in $mnt-v3 $mnt-mirrors $mnt; do
		mountpoint -q $m && { timeout 60 umount $m || umount -l $m; }
	done
	for i in $pids $(cat /run/ds1.pid /run/ds2.pid 2>/dev/null); do kill "$i" 2>/dev/null; done
	sleep 1
	save /run/mds.log /run/mds2.log /run/ds1.log /run/ds2.log $wl.log $wl.out
	umount /srv/mds /srv/mds2 /srv/ds1 /srv/ds2
	[ ${#ds_rdma[@]} -gt 0 ] && rdma link delete rxe1 >/dev/null 2>&1
	exportfs -u 10.98.0.0/24:/srv/knfsd
	[ "$knfsd_mine" = 1 ] && stop_knfsd >/dev/null 2>&1
	ip netns del $ns
}

# ---------------------------------------------------------------------------------------------
# The "failover" case (docs/ha.md): two rnfsd heads of one identity in network namespaces of
# their own (ha-a, ha-b: two machines), each on a veth pair whose other end is a port of the
# bridge brha, where the client is (10.95.0.1) and three etcd members listen (ports 2379,
# 2479, 2579). The active head holds the service address 10.95.0.100 on its device; the
# client mounts it with NFSv3 and NFSv4.2 and tests/vm/failover.py works while /run/ha-failover
# kills the active head (SIGKILL), takes the address off its device (a fencing agent's part:
# the machine is gone), waits for the standby to serve, and starts the killed one again as the
# new standby. The export is one tmpfs both heads see (the shared file system).
FAILOVER_KILLS=${FAILOVER_KILLS:-3}
FAILOVER_MIB=${FAILOVER_MIB:-64}
FAILOVER_INCREMENTS=${FAILOVER_INCREMENTS:-1000}
# the heads are also the pNFS metadata server of a second export (/srv/ha-pnfs, every file
# mirrored on two rnfsd data servers at 10.95.0.4 and .5 on the bridge), written during kills
# too (failover.py's pnfs step); FAILOVER_PNFS=0 leaves it out
FAILOVER_PNFS=${FAILOVER_PNFS:-1}
FAILOVER_PNFS_MIB=${FAILOVER_PNFS_MIB:-$FAILOVER_MIB} # two tmpfs copies of it: mind the guest's 2 GiB
# ha_machine NAME ADDR: a machine of the failover case, network namespace ha-NAME on a veth
# pair whose other end is a port of the bridge brha, with ADDR/24
ha_machine() {
	ip netns add ha-$1 && ip link add ha-${1}0 type veth peer name ha-${1}1 &&
		ip link set ha-${1}0 master brha && ip link set ha-${1}0 up &&
		ip link set ha-${1}1 netns ha-$1 && ip -n ha-$1 addr add $2/24 dev ha-${1}1 &&
		ip -n ha-$1 link set ha-${1}1 up && ip -n ha-$1 link set lo up
}
# knfsd's reference figure (FAILOVER_KNFSD=1; not in --quick): the same client work and kills
# against knfsd failed over by hand (failover_knfsd below)
FAILOVER_KNFSD=${FAILOVER_KNFSD:-1}
failover_case() { # server vers transport
	case ",$CASES," in *,failover,*) ;; *) return 0 ;; esac
	if [ "$2" != 4.2 ] || [ "$3" != tcp ]; then
		result "$1" "$2" "$3" failover SKIP 0 "failover: run with the vers=4.2 tcp combination"
		return 0
	fi
	if [ "$1" = knfsd ]; then
		if [ "$FAILOVER_KNFSD" = 1 ]; then
			failover_knfsd
		else
			result knfsd 4.2 tcp failover SKIP 0 "failover: knfsd's reference (moved by hand) runs with FAILOVER_KNFSD=1"
		fi
		return 0
	fi
	local cli=10.95.0.1 svc=10.95.0.100 t0 out rc why h i etcd_urls="" cluster=""
	t0=$(now)
	failover_fail() { result rnfsd 4.2 tcp failover FAIL "$(elapsed "$t0")" "$1"; }
	command -v etcd >/dev/null || { failover_fail "etcd missing (tests/vm/run installs etcd-server)"; return; }
	start_statd || { failover_fail "rpc.statd did not start"; return; }
	modprobe bridge 2>/dev/null
	ip link add brha type bridge && ip link set brha up && ip addr add $cli/24 dev brha ||
		{ failover_fail "bridge setup failed"; return; }
	for h in a b; do
		ha_machine $h 10.95.0.$([ $h = a ] && echo 2 || echo 3) ||
			{ failover_fail "network namespace ha-$h setup failed"; return; }
	done
	mkdir -p /run/ha
	for i in 0 1 2; do
		local cp=$((2379 + 100 * i)) pp=$((2380 + 100 * i))
		etcd_urls="$etcd_urls${etcd_urls:+,}m$i=http://$cli:$pp"
		cluster="$cluster${cluster:+,}$cli:$cp"
	done
	for i in 0 1 2; do
		local cp=$((2379 + 100 * i)) pp=$((2380 + 100 * i))
		setsid etcd --name m$i --data-dir /run/ha/etcd$i --listen-client-urls http://$cli:$cp \
			--advertise-client-urls http://$cli:$cp --listen-peer-urls http://$cli:$pp \
			--initial-advertise-peer-urls http://$cli:$pp --initial-cluster "$etcd_urls" \
			--initial-cluster-state new --initial-cluster-token rnfs-ha >/run/ha/etcd$i.log 2>&1 </dev/null &
	done
	mkdir -p /srv/ha && mount -t tmpfs -o mode=0777 tmpfs /srv/ha
	echo "/srv/ha 10.95.0.0/24(rw,no_root_squash,insecure)" >/run/ha/exports
	local pnfs_args="" pnfs_py=() ds_pids=""
	if [ "$FAILOVER_PNFS" = 1 ]; then
		mkdir -p /srv/ha-pnfs && mount -t tmpfs -o mode=0777 tmpfs /srv/ha-pnfs
		echo "/srv/ha-pnfs 10.95.0.0/24(rw,no_root_squash,insecure,pnfs)" >>/run/ha/exports
		for i in 1 2; do
			ip addr add 10.95.0.$((3 + i))/24 dev brha
			mkdir -p /srv/ha-ds$i /run/ha/ds$i-state && mount -t tmpfs -o mode=0700 tmpfs /srv/ha-ds$i
			echo "/srv/ha-ds$i 10.95.0.0/24(rw,no_root_squash,sync)" >/run/ha/ds$i.exports
			setsid env $RNFSD_ENV "$RNFSD" --exports /run/ha/ds$i.exports \
				--listen 10.95.0.$((3 + i)):$((2049 + i)) --no-portmap --no-nlm --no-rdma \
				--state-dir /run/ha/ds$i-state --admin-socket /run/ha/ds$i.sock \
				>/run/ha/ds$i.log 2>&1 </dev/null &
			ds_pids="$ds_pids $!"
			pnfs_args="$pnfs_args --pnfs-ds ds$i=10.95.0.$((3 + i)):$((2049 + i)):/srv/ha-ds$i"
			pnfs_py+=(--pnfs-ds /srv/ha-ds$i)
		done
		pnfs_args="$pnfs_args --pnfs-mirrors 2"
		pnfs_py+=(--pnfs /mnt/ha-pnfs --pnfs-mib "$FAILOVER_PNFS_MIB")
		for _ in $(seq 300); do
			[ "$(cat /run/ha/ds1.log /run/ha/ds2.log | grep -c 'rnfsd ready:')" = 2 ] && break
			sleep 0.1
		done
	fi
	for h in a b; do
		mkdir -p /run/ha/state-$h
		cat >/run/ha/start-$h <<-EOF
			#!/bin/bash
			# (re)starts head $h; it serves once it holds the identity, or stands by
			setsid ip netns exec ha-$h env $RNFSD_ENV "$RNFSD" --exports /run/ha/exports \\
				--state-dir /run/ha/state-$h --listen 0.0.0.0:2049 --no-rdma --lease-time 15 \\
				--cluster etcd://$cluster --node-id nfs-ha --identity-ttl 3 \\
				--service-address $svc/24@ha-${h}1 --admin-socket /run/ha/admin-$h.sock $pnfs_args \\
				>>/run/ha/$h.log 2>&1 </dev/null &
			echo \$! >/run/ha/$h.pid
		EOF
		chmod 755 /run/ha/start-$h
		: >/run/ha/$h.log
	done
	# the active head (the one whose device has the address) dies with its machine: SIGKILL,
	# its address gone; the other serves; the dead one comes back as the standby
	cat >/run/ha-failover <<-EOF
		#!/bin/bash
		for h in a b; do
			ip -n ha-\$h -o addr show dev ha-\${h}1 | grep -q " $svc/" && break
		done
		o=\$([ \$h = a ] && echo b || echo a)
		n=\$(grep -c "rnfsd ready:" /run/ha/\$o.log)
		t0=\$(date +%s.%N)
		kill -9 "\$(cat /run/ha/\$h.pid)"
		ip -n ha-\$h addr del $svc/24 dev ha-\${h}1
		for _ in \$(seq 600); do
			[ "\$(grep -c "rnfsd ready:" /run/ha/\$o.log)" -gt "\$n" ] && break
			sleep 0.05
		done
		t1=\$(date +%s.%N)
		[ "\$(grep -c "rnfsd ready:" /run/ha/\$o.log)" -gt "\$n" ] || { echo "head \$o did not take over"; exit 1; }
		sleep 0.5 # the killed process is reaped before its namespace starts another
		/run/ha/start-\$h
		echo "head \$h killed, head \$o ready after \$(awk -v a=\$t0 -v b=\$t1 'BEGIN { printf "%.2f", b - a }') s"
	EOF
	chmod 755 /run/ha-failover
	# head a first (it creates the handle key b must share), then b as the standby
	/run/ha/start-a
	for _ in $(seq 600); do grep -q "rnfsd ready:" /run/ha/a.log && break; sleep 0.2; done
	if ! grep -q "rnfsd ready:" /run/ha/a.log; then
		failover_fail "head a did not get ready"
		dump "ha a.log" /run/ha/a.log 30
		dump "etcd0.log" /run/ha/etcd0.log 10
	else
		cp /run/ha/state-a/fh.key /run/ha/state-b/fh.key
		/run/ha/start-b
		say "failover: $(grep -o 'rnfsd ready:.*' /run/ha/a.log | head -1)"
		mkdir -p /mnt/ha3 /mnt/ha4 /mnt/ha-pnfs
		if timeout 120 mount -t nfs -o vers=3,proto=tcp $svc:/srv/ha /mnt/ha3 &&
			timeout 120 mount -t nfs -o vers=4.2,proto=tcp $svc:/srv/ha /mnt/ha4 &&
			{ [ "$FAILOVER_PNFS" != 1 ] ||
				timeout 120 mount -t nfs -o vers=4.2,proto=tcp $svc:/srv/ha-pnfs /mnt/ha-pnfs; }; then
			# PNFS_DEBUG=1: the kernel client's pNFS debugging messages into dmesg (saved)
			[ "${PNFS_DEBUG:-0}" = 1 ] && echo 0x3000 >/proc/sys/sunrpc/nfs_debug
			out=$(timeout -k 10 2400 python3 "$REPO/tests/vm/failover.py" --v3 /mnt/ha3 --v4 /mnt/ha4 \
				--failover-cmd /run/ha-failover --kills "$FAILOVER_KILLS" --write-mib "$FAILOVER_MIB" \
				--increments "$FAILOVER_INCREMENTS" --counter-mounts "${FAILOVER_COUNTER_MOUNTS:-v3,v3,v4,v4}" \
				"${pnfs_py[@]}" 2>&1)
			rc=$?
			echo 0 >/proc/sys/sunrpc/nfs_debug
			echo "$out" | sed "s/^/failover| /"
			why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
			if [ "$rc" = 0 ]; then
				result rnfsd 4.2 tcp failover PASS "$(elapsed "$t0")" "$(echo "$out" | grep -o 'FAILOVER.*' | head -1)"
			else
				failover_fail "${why:-failover.py exited $rc}"
				dump "ha a.log" /run/ha/a.log 40
				dump "ha b.log" /run/ha/b.log 40
			fi
		else
			failover_fail "mounting $svc failed"
			dump "ha a.log" /run/ha/a.log 30
		fi
		for m in /mnt/ha-pnfs /mnt/ha4 /mnt/ha3; do
			mountpoint -q $m && { timeout 60 umount $m || umount -l $m; }
		done
	fi
	for h in a b; do kill "$(cat /run/ha/$h.pid 2>/dev/null)" 2>/dev/null; done
	for i in $ds_pids; do kill "$i" 2>/dev/null; done
	sleep 1
	pkill -x etcd
	save /run/ha/a.log /run/ha/b.log /run/ha/etcd0.log
	if [ "$FAILOVER_PNFS" = 1 ]; then
		save /run/ha/ds1.log /run/ha/ds2.log
		umount /srv/ha-pnfs /srv/ha-ds1 /srv/ha-ds2
	fi
	umount /srv/ha
	ip netns del ha-a; ip netns del ha-b; ip link del brha
}

# The reference for the failover case: knfsd has no heads to hand an identity between, so what
# a knfsd site's cluster manager does (pacemaker's nfsserver agent) is done by a script on this
# one kernel. The machine serving 10.95.0.100 dies: its address goes and knfsd's threads stop
# (every open, lock and delegation in its memory is lost); the other machine takes the state
# directory (nfsdcltrack's NFSv4 client records, statd's list of NLM clients: each machine's
# copy is bind-mounted on /var/lib/nfs when it serves), starts rpc.statd and knfsd on it, brings
# the address up (gratuitous ARP) and runs sm-notify. knfsd tracks clients for reclaim only in
# the initial network namespace, so here the client is the one in a namespace of its own
# (ha-c, 10.95.0.10, on the bridge brha with the service address), with its own rpcbind and
# rpc.statd for NLM (a tmpfs /run in its mount namespace keeps their files apart) and a host
# name of its own (its NLM requests carry it; sm-notify finds it by it in /etc/hosts). Lease, grace
# and lockd's grace are 15 s, as rnfsd's heads have them. No pNFS step (knfsd is no flexfiles
# metadata server over other data servers).
failover_knfsd() {
	local cli=10.95.0.10 svc=10.95.0.100 t0 out rc why d
	local ha=/tmp/ha-knfsd # not /run: the client's namespace mounts a /run of its own
	t0=$(now)
	kfail() { result knfsd 4.2 tcp failover FAIL "$(elapsed "$t0")" "$1"; }
	modprobe bridge 2>/dev/null
	ip link add brha type bridge && ip link set brha up && ip addr add $svc/24 dev brha &&
		ha_machine c $cli || { kfail "network setup failed"; return; }
	mkdir -p /srv/knfsd/ha $ha /mnt/ha3 /mnt/ha4 && mount -t tmpfs -o mode=0777 tmpfs /srv/knfsd/ha
	# NFSv4 clients see /srv/knfsd as their root (fsid=0), the export as /ha
	exportfs -i -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 10.95.0.0/24:/srv/knfsd &&
		exportfs -i -o rw,no_root_squash,insecure,no_subtree_check,fsid=95 10.95.0.0/24:/srv/knfsd/ha ||
		{ kfail "exportfs failed"; return; }
	# machine a's state directory, on /var/lib/nfs while a serves; lease and grace are set
	# while no nfsd thread runs
	rpc.nfsd 0
	pkill -x rpc.statd
	for d in nfsdcltrack sm sm.bak; do
		mkdir -p /var/lib/nfs/$d $ha/a/$d
		cp -a /var/lib/nfs/$d/. $ha/a/$d/
		mount --bind $ha/a/$d /var/lib/nfs/$d
	done
	echo a >$ha/active
	echo 15 >/proc/fs/nfsd/nfsv4leasetime && echo 15 >/proc/fs/nfsd/nfsv4gracetime &&
		sysctl -qw fs.nfs.nlm_grace_period=15 && rpc.statd --no-notify && rpc.nfsd 8 ||
		{ kfail "knfsd did not restart with a 15 s lease"; return; }
	/run/knfsd-reclaimed
	cat >$ha/takeover <<-EOF
		#!/bin/bash
		# in the initial namespaces: the active machine dies, the other takes its state over
		from=\$(cat $ha/active); to=\$([ "\$from" = a ] && echo b || echo a)
		t0=\$(date +%s.%N)
		ip addr del $svc/24 dev brha
		rpc.nfsd 0
		kill \$(cat /run/rpc.statd.pid) # this namespace's: the client's statd runs too
		sleep 0.2
		for d in nfsdcltrack sm sm.bak; do
			umount /var/lib/nfs/\$d
			rm -rf $ha/\$to/\$d && mkdir -p $ha/\$to && cp -a $ha/\$from/\$d $ha/\$to/\$d
			mount --bind $ha/\$to/\$d /var/lib/nfs/\$d
		done
		echo \$to >$ha/active
		rpc.statd --no-notify && rpc.nfsd 8 || { echo "knfsd did not start on \$to"; exit 1; }
		ip addr add $svc/24 dev brha
		arping -q -U -c 1 -I brha $svc >/dev/null 2>&1
		sm-notify -f -v $svc # named as the clients know the server (pacemaker's nfsnotify does so)
		t1=\$(date +%s.%N)
		echo "machine \$from down, knfsd on \$to ready after \$(awk -v a=\$t0 -v b=\$t1 'BEGIN { printf "%.2f", b - a }') s"
	EOF
	# the client's side, run in ha-c: its kill command enters this script's namespaces
	cat >$ha/failover <<-EOF
		#!/bin/bash
		exec nsenter --target 1 --net --mount $ha/takeover
	EOF
	cat >$ha/client <<-EOF
		#!/bin/bash
		mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/rpcbind $ha/client-sm/sm $ha/client-sm/sm.bak || exit 1
		hostname rnfs-ha-client # the name its NLM requests carry: the server notifies it by it
		echo "rnfs-ha-client-\$\$" >/sys/fs/nfs/net/nfs_client/identifier
		rpcbind -w || { echo "client rpcbind failed"; exit 1; }
		rpc.statd --no-notify -P $ha/client-sm || { echo "client rpc.statd failed"; exit 1; }
		statd=\$(cat /run/rpc.statd.pid)
		rc=0
		# the first locking NFSv3 mount in a new namespace fails at times with ENOENT (the
		# client's lockd starting there); the next one works
		for i in 1 2 3; do
			timeout 120 mount -t nfs -o vers=3,proto=tcp $svc:/srv/knfsd/ha /mnt/ha3 && break
			sleep 1
		done
		if mountpoint -q /mnt/ha3 &&
			timeout 120 mount -t nfs -o vers=4.2,proto=tcp $svc:/ha /mnt/ha4; then
			timeout -k 10 3000 python3 "$REPO/tests/vm/failover.py" --v3 /mnt/ha3 --v4 /mnt/ha4 \\
				--failover-cmd $ha/failover --kills "$FAILOVER_KILLS" --write-mib "$FAILOVER_MIB" \\
				--increments "$FAILOVER_INCREMENTS" --counter-mounts "${FAILOVER_COUNTER_MOUNTS:-v3,v3,v4,v4}" 2>&1
			rc=\$?
		else
			echo "mounting $svc failed: exports \$(showmount -e $svc 2>&1 | tr '\n' ' ')"
			rc=1
		fi
		for m in /mnt/ha4 /mnt/ha3; do
			mountpoint -q \$m && { timeout 60 umount \$m || umount -l \$m; }
		done
		kill \$statd
		exit \$rc
	EOF
	chmod 755 $ha/takeover $ha/failover $ha/client
	say "failover: knfsd at $svc (lease and grace 15 s), the client in namespace ha-c at $cli; exports $(exportfs -v | tr '\n' ' ')"
	grep -q rnfs-ha-client /etc/hosts || echo "$cli rnfs-ha-client" >>/etc/hosts
	out=$(ip netns exec ha-c unshare --uts $ha/client 2>&1)
	rc=$?
	echo "$out" | sed "s/^/failover knfsd| /"
	why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
	if [ "$rc" = 0 ]; then
		result knfsd 4.2 tcp failover PASS "$(elapsed "$t0")" "$(echo "$out" | grep -o 'FAILOVER.*' | head -1)"
	else
		kfail "${why:-$(echo "$out" | tail -1)}"
	fi
	# knfsd as the other cases have it: lease and grace 10 s, the usual state directory
	ip netns pids ha-c 2>/dev/null | xargs -r kill 2>/dev/null
	rpc.nfsd 0
	pkill -x rpc.statd
	for d in nfsdcltrack sm sm.bak; do umount /var/lib/nfs/$d; done
	exportfs -u 10.95.0.0/24:/srv/knfsd/ha
	exportfs -u 10.95.0.0/24:/srv/knfsd
	umount /srv/knfsd/ha
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	sysctl -qw fs.nfs.nlm_grace_period=10
	rpc.statd --no-notify || say "rpc.statd did not restart"
	/run/knfsd-restart >/dev/null && /run/knfsd-reclaimed || say "knfsd did not restart after the failover case"
	ip netns del ha-c; ip link del brha
}

# ---------------------------------------------------------------------------------------------
# soak (only when named: tests/vm/run --cases soak; docs/faults.md): rnfsd for SOAK_MINUTES under
# tests/vm/soak.py's mixed clients (fsx, a locked counter over v3 and v4.2, directory churn,
# sequential writes read back, pNFS writes through a data server), killed and restarted every
# SOAK_RESTART_EVERY seconds on its state directory, its device (ext4 on device-mapper, as in
# the faults case) stalled for 10 s every SOAK_FAULT_EVERY seconds; its RSS and descriptors
# sampled, the curve saved (soak.csv, soak.svg) and its warnings and errors counted.
SOAK_MINUTES=${SOAK_MINUTES:-60}
SOAK_RESTART_EVERY=${SOAK_RESTART_EVERY:-300}
SOAK_FAULT_EVERY=${SOAK_FAULT_EVERY:-300}
soak_case() { # server vers transport
	case ",$CASES," in *,soak,*) ;; *) return 0 ;; esac
	if [ "$1" != rnfsd ] || [ "$2" != 4.2 ] || [ "$3" != tcp ]; then
		result "$1" "$2" "$3" soak SKIP 0 "soak: rnfsd, with the vers=4.2 tcp combination"
		return 0
	fi
	local t0 dm=rnfs-soak img=/tmp/soak.img loop="" sectors=$((256 * 2048)) log=/run/rnfsd-soak.log
	local dir=/srv/soak pdir=/srv/soak-pnfs ds=/srv/soak-ds state out rc why="" pypid ds_pid=""
	t0=$(now)
	soak_fail() { result rnfsd 4.2 tcp soak FAIL "$(elapsed "$t0")" "$1"; }
	export DM_DISABLE_UDEV=1
	modprobe dm-mod && modprobe loop || { soak_fail "device-mapper modules missing"; return; }
	start_statd || { soak_fail "rpc.statd did not start"; return; }
	rnfsd_ns || { soak_fail "network namespace setup failed"; return; }
	mkdir -p $dir $pdir $ds /mnt/soak3 /mnt/soak4 /mnt/soak-pnfs
	truncate -s $((sectors / 2048))M $img
	if ! loop=$(losetup -f --show $img) || ! dmsetup create $dm --table "0 $sectors linear $loop 0" ||
		! mkfs.ext4 -q -F -b 4096 /dev/mapper/$dm || ! mount /dev/mapper/$dm $dir; then
		soak_fail "device-mapper set-up failed"
	else
		chmod 0777 $dir
		mount -t tmpfs -o mode=0777 tmpfs $pdir && mount -t tmpfs -o mode=0777 tmpfs $ds
		printf '%s\n' "$dir $SUBNET(rw,no_root_squash,insecure,no_subtree_check)" \
			"$pdir $SUBNET(rw,no_root_squash,insecure,no_subtree_check,pnfs)" >/run/soak.exports
		echo "$ds $SUBNET(rw,no_root_squash,sync)" >/run/soak-ds.exports
		state=$(mktemp -d /run/rnfsd-soak-state.XXXX)
		mkdir -p /run/soak-ds-state
		setsid ip netns exec $RNFSD_NS env $RNFSD_ENV "$RNFSD" --exports /run/soak-ds.exports \
			--listen 0.0.0.0:2050 --no-portmap --no-nlm --no-rdma --state-dir /run/soak-ds-state \
			--admin-socket /run/soak-ds.sock >/run/rnfsd-soak-ds.log 2>&1 </dev/null &
		ds_pid=$!
		cat >/run/soak-launch <<-EOF
			#!/bin/bash
			exec ip netns exec $RNFSD_NS env $RNFSD_ENV "$RNFSD" --exports /run/soak.exports \\
				--state-dir $state --listen 0.0.0.0:2049 --no-rdma --lease-time 15 \\
				--admin-socket /run/rnfsd-soak.sock --pnfs-ds ds1=$PEER_ADDR:2050:$ds \\
				$RNFSD_ARGS >>$log 2>&1
		EOF
		cat >/run/soak-restart <<-EOF
			#!/bin/bash
			# SIGKILL, and the same state directory again; waits until it serves
			pid=\$(cat /run/soak.pid)
			kill -9 "\$pid"
			for _ in \$(seq 300); do
				[ -e /proc/\$pid ] && [ "\$(awk '{print \$3}' /proc/\$pid/stat 2>/dev/null)" != Z ] || break
				sleep 0.1
			done
			n=\$(grep -c "rnfsd ready:" $log)
			setsid /run/soak-launch </dev/null &
			echo \$! >/run/soak.pid
			for _ in \$(seq 600); do
				[ "\$(grep -c "rnfsd ready:" $log)" -gt "\$n" ] && { echo "rnfsd killed and restarted (pid \$(cat /run/soak.pid))"; exit 0; }
				sleep 0.1
			done
			echo "rnfsd did not get ready after the restart"; exit 1
		EOF
		cat >/run/soak-stall <<-EOF
			#!/bin/bash
			dmsetup suspend --noflush --nolockfs $dm || exit 1
			sleep 10
			dmsetup resume $dm && echo "device stalled for 10 s"
		EOF
		chmod 755 /run/soak-launch /run/soak-restart /run/soak-stall
		: >$log
		setsid /run/soak-launch </dev/null &
		echo $! >/run/soak.pid
		for _ in $(seq 300); do grep -q "rnfsd ready:" $log && break; sleep 0.2; done
		if ! grep -q "rnfsd ready:" $log; then
			soak_fail "rnfsd did not get ready"
			dump "rnfsd-soak.log" $log 20
		elif ! { timeout 120 mount -t nfs -o vers=3,proto=tcp "$PEER_ADDR:$dir" /mnt/soak3 &&
			timeout 120 mount -t nfs -o vers=4.2,proto=tcp "$PEER_ADDR:$dir" /mnt/soak4 &&
			timeout 120 mount -t nfs -o vers=4.2,proto=tcp "$PEER_ADDR:$pdir" /mnt/soak-pnfs; }; then
			soak_fail "mounting the soak exports failed"
		else
			say "soak: $(grep -o 'rnfsd ready:.*' $log | head -1); $SOAK_MINUTES min, restart every ${SOAK_RESTART_EVERY}s, stall every ${SOAK_FAULT_EVERY}s"
			timeout -k 10 $((SOAK_MINUTES * 60 + 1200)) python3 -u "$REPO/tests/vm/soak.py" \
				--v3 /mnt/soak3 --v4 /mnt/soak4 --pnfs /mnt/soak-pnfs --minutes "$SOAK_MINUTES" \
				--restart-cmd /run/soak-restart --restart-every "$SOAK_RESTART_EVERY" \
				--stall-cmd /run/soak-stall --fault-every "$SOAK_FAULT_EVERY" --pid-file /run/soak.pid \
				--csv /tmp/soak.csv --svg /tmp/soak.svg >/tmp/soak.out 2>&1 &
			pypid=$!
			tail -n +1 -f /tmp/soak.out --pid=$pypid | sed -u "s/^/soak| /"
			wait $pypid
			rc=$?
			out=$(cat /tmp/soak.out)
			# what the server logged above INFO, each message once with its count
			grep -E "^[^ ]+ +(WARN|ERROR) " $log | sed -E 's/^[^ ]+ +//; s/[0-9]+/N/g' | sort | uniq -c |
				sort -rn | head -n 30 | sed "s/^/soak log| /"
			why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
			if [ "$rc" = 0 ]; then
				result rnfsd 4.2 tcp soak PASS "$(elapsed "$t0")" "$(echo "$out" | grep -o 'SOAK.*' | head -1)"
			else
				soak_fail "${why:-soak.py exited $rc}"
				dmesg_tail 20
				dump "rnfsd-soak.log" $log 30
			fi
		fi
		for m in /mnt/soak-pnfs /mnt/soak4 /mnt/soak3; do
			mountpoint -q $m && { timeout 60 umount $m || umount -l $m; }
		done
		kill "$(cat /run/soak.pid)" 2>/dev/null
		[ -n "$ds_pid" ] && kill $ds_pid 2>/dev/null
		sleep 2
		save $log /run/rnfsd-soak-ds.log /tmp/soak.csv /tmp/soak.svg /tmp/soak.out
		umount $pdir $ds
	fi
	dmsetup resume $dm 2>/dev/null
	mountpoint -q $dir && { umount $dir || umount -l $dir; }
	dmsetup remove --retry $dm 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop"
	rm -f $img
}

# ---------------------------------------------------------------------------------------------
# faults: the export on a small ext4 over a device-mapper device (loop device under it) whose
# table tests/vm/faults.py changes: ENOSPC, writes failing (dm-flakey error_writes), the
# server's writeback failing between an UNSTABLE write and its COMMIT, and the device stalling
# (dmsetup suspend) while another export of the same server is written (docs/faults.md). Once
# per server, in the vers=4.2 tcp combination; the same steps for both, knfsd with 8 threads
# as it runs here, rnfsd with its defaults. Each step gets a new file system, exported and
# mounted afresh: failed metadata writes leave ext4's bitmaps on the device behind its memory,
# and once those buffers are dropped the file system finds its free space corrupt (ENOSPC).
# Only rnfsd's row requires the other export to be served during the stall
# (--expect-isolation); knfsd's shows how long it waited.
FAULTS_STALL=${FAULTS_STALL:-10}
FAULTS_STEPS=${FAULTS_STEPS:-nospc stall eio commit dquot}
FAULTS_SECTORS=$((64 * 2048))
faults_up() { # server step: a new file system at FAULTS_DIR, exported, mounted on /mnt/flt3, flt4, fltok
	local s=$1 img=/tmp/faults-$1.img dm=rnfs-faults-$1 feat="" opts=""
	# the dquot step: user quotas kept (the quota feature) and enforced (usrquota)
	[ "$2" = dquot ] && feat=,quota opts=,usrquota
	truncate -s $((FAULTS_SECTORS / 2048))M $img
	FAULTS_LOOP=$(losetup -f --show $img) &&
		dmsetup create $dm --table "0 $FAULTS_SECTORS linear $FAULTS_LOOP 0" &&
		mkfs.ext4 -q -F -b 4096 -O ^has_journal,^resize_inode$feat -E packed_meta_blocks=1 /dev/mapper/$dm &&
		mount -o errors=continue,noauto_da_alloc$opts /dev/mapper/$dm $FAULTS_DIR && chmod 0777 $FAULTS_DIR ||
		{ FAULTS_WHY="device-mapper set-up failed"; return 1; }
	# the first free block: what mkfs wrote (metadata, root directory) lies before it
	FAULTS_DATA=$(dumpe2fs /dev/mapper/$dm 2>/dev/null | awk '/^  Free blocks: / { sub(/-.*/, "", $3); print $3 * 8; exit }')
	[ -n "$FAULTS_DATA" ] || { FAULTS_WHY="dumpe2fs found no free blocks"; return 1; }
	if [ "$s" = knfsd ]; then
		exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=78 "$SUBNET:$FAULTS_DIR" ||
			{ FAULTS_WHY="exportfs failed"; return 1; }
	else
		printf '%s\n' "$FAULTS_OK $SUBNET(rw,no_root_squash,insecure,no_subtree_check)" \
			"$FAULTS_DIR $SUBNET(rw,no_root_squash,insecure,no_subtree_check)" >/run/rnfsd-faults.exports
		local log=/run/rnfsd-faults.log n
		n=$(grep -c "rnfsd ready:" $log)
		setsid ip netns exec $RNFSD_NS env $RNFSD_ENV "$RNFSD" --exports /run/rnfsd-faults.exports \
			--state-dir "$(mktemp -d /run/rnfsd-faults-state.XXXX)" --listen 0.0.0.0:2049 \
			--no-rdma --lease-time 15 --admin-socket /run/rnfsd-faults.sock $RNFSD_ARGS \
			>>$log 2>&1 </dev/null &
		FAULTS_PID=$!
		for _ in $(seq 300); do
			[ "$(grep -c "rnfsd ready:" $log)" -gt "$n" ] && break
			kill -0 $FAULTS_PID 2>/dev/null || break
			sleep 0.2
		done
		[ "$(grep -c "rnfsd ready:" $log)" -gt "$n" ] || { FAULTS_WHY="rnfsd did not get ready"; return 1; }
	fi
	timeout 120 mount -t nfs -o vers=4.2,proto=tcp "$FAULTS_V4" /mnt/flt4 &&
		timeout 120 mount -t nfs -o vers=3,proto=tcp,nolock "$FAULTS_V3" /mnt/flt3 &&
		timeout 120 mount -t nfs -o vers=4.2,proto=tcp "$FAULTS_OKV4" /mnt/fltok ||
		{ FAULTS_WHY="mounting $FAULTS_V4, $FAULTS_V3 or $FAULTS_OKV4 failed"; return 1; }
}
faults_down() { # server: undoes faults_up, whatever part of it was done
	local s=$1 m
	for m in /mnt/fltok /mnt/flt3 /mnt/flt4; do
		mountpoint -q $m && { timeout 60 umount $m || umount -l $m; }
	done
	if [ -n "$FAULTS_PID" ]; then
		kill $FAULTS_PID 2>/dev/null
		for _ in $(seq 50); do kill -0 $FAULTS_PID 2>/dev/null || break; sleep 0.2; done
		kill -9 $FAULTS_PID 2>/dev/null
		wait $FAULTS_PID 2>/dev/null
		FAULTS_PID=
	fi
	[ "$s" = knfsd ] && exportfs -u "$SUBNET:$FAULTS_DIR" 2>/dev/null
	dmsetup resume rnfs-faults-$s 2>/dev/null # whatever state a step left it in
	# knfsd closes its cached files a moment after the export goes
	for _ in $(seq 50); do
		mountpoint -q $FAULTS_DIR || break
		umount $FAULTS_DIR 2>/dev/null && break
		sleep 0.2
	done
	mountpoint -q $FAULTS_DIR && umount -l $FAULTS_DIR
	dmsetup remove --retry rnfs-faults-$s 2>/dev/null
	[ -n "$FAULTS_LOOP" ] && losetup -d "$FAULTS_LOOP" 2>/dev/null
	FAULTS_LOOP=
	rm -f /tmp/faults-$s.img
}
faults_case() { # server vers transport
	case ",$CASES," in *,faults,*) ;; *) return 0 ;; esac
	if [ "$2" != 4.2 ] || [ "$3" != tcp ]; then
		result "$1" "$2" "$3" faults SKIP 0 "faults: run with the vers=4.2 tcp combination"
		return 0
	fi
	local s=$1 t0 step out rc why="" probe="" iso="" pypid
	t0=$(now)
	# no udev in the guest: libdevmapper makes the /dev/mapper nodes itself
	export DM_DISABLE_UDEV=1
	if ! { modprobe dm-mod && modprobe dm-flakey && modprobe loop; }; then
		result "$s" 4.2 tcp faults FAIL "$(elapsed "$t0")" "device-mapper modules missing"
		return
	fi
	FAULTS_PID= FAULTS_LOOP=
	if [ "$s" = knfsd ]; then
		# below knfsd's NFSv4 root (fsid=0 on /srv/knfsd): v4 mounts name them from there
		FAULTS_DIR=/srv/knfsd/flt-dev FAULTS_OK=/srv/knfsd/flt-ok
		FAULTS_V4=$ADDR:/flt-dev FAULTS_V3=$ADDR:$FAULTS_DIR FAULTS_OKV4=$ADDR:/flt-ok
	else
		FAULTS_DIR=/srv/flt-dev FAULTS_OK=/srv/flt-ok iso=--expect-isolation
		FAULTS_V4=$PEER_ADDR:$FAULTS_DIR FAULTS_V3=$PEER_ADDR:$FAULTS_DIR FAULTS_OKV4=$PEER_ADDR:$FAULTS_OK
		mkdir -p $FAULTS_OK && mount -t tmpfs -o mode=0777 tmpfs $FAULTS_OK
		: >/run/rnfsd-faults.log
	fi
	mkdir -p $FAULTS_DIR $FAULTS_OK /mnt/flt3 /mnt/flt4 /mnt/fltok
	chmod 0777 $FAULTS_OK
	for step in $FAULTS_STEPS; do
		if ! faults_up "$s" "$step"; then
			why="$why$step: $FAULTS_WHY;"
			[ -n "$FAULTS_PID" ] && dump "rnfsd-faults.log" /run/rnfsd-faults.log 20
		else
			# on the console as it comes: a step that hangs still shows how far it got
			timeout -k 10 300 python3 -u "$REPO/tests/vm/faults.py" --v3 /mnt/flt3 --v4 /mnt/flt4 \
				--ok /mnt/fltok --dm rnfs-faults-$s --backing "$FAULTS_LOOP" --sectors $FAULTS_SECTORS \
				--data-sector "$FAULTS_DATA" --server-dir $FAULTS_DIR --stall "$FAULTS_STALL" --steps $step $iso \
				>/tmp/faults.out 2>&1 &
			pypid=$!
			tail -n +1 -f /tmp/faults.out --pid=$pypid | sed -u "s/^/faults $s| /"
			wait $pypid
			rc=$?
			out=$(cat /tmp/faults.out)
			probe="$probe$(echo "$out" | grep -o 'FAULTS.*' | head -1 | sed 's/^FAULTS //')"
			if [ "$rc" != 0 ]; then
				why="$why$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')"
				echo "$out" | grep -q "status=FAIL" || why="$why$step: faults.py exited $rc;"
				dmesg_tail 15
				[ -n "$FAULTS_PID" ] && dump "rnfsd-faults.log" /run/rnfsd-faults.log 30
			fi
		fi
		faults_down "$s"
	done
	if [ "$s" = rnfsd ]; then
		save /run/rnfsd-faults.log
		umount $FAULTS_OK
	fi
	if [ -z "$why" ]; then
		result "$s" 4.2 tcp faults PASS "$(elapsed "$t0")" "FAULTS ${probe:-steps: $FAULTS_STEPS}"
	else
		result "$s" 4.2 tcp faults FAIL "$(elapsed "$t0")" "$why"
	fi
}

# ---------------------------------------------------------------------------------------------
# The "krb5" case (docs/interop.md): RPCSEC_GSS (Kerberos V5) through the kernel client's
# rpc.gssd. A KDC in the guest (realm RNFS.TEST, krb5kdc on port 88 of 10.97.0.1) has keys for
# nfs/knfsd.rnfs.test, nfs/rnfsd.rnfs.test (and nfs/knfsd-rdma..., nfs/rnfsd-rdma...), the
# client's host/rnfs-vm.rnfs.test (the guest's /etc/krb5.keytab while the case runs) and two
# users, alice and bob, local users of the guest with tickets in /tmp/krb5cc_UID (kinit);
# carol is a local user without one. Each server exports a fresh tmpfs with
# sec=krb5p:krb5i:krb5 only; the client mounts it by the name that has the nfs/ key (rpc.gssd
# asks for a ticket to nfs@NAME as typed) with sec=krb5, krb5i and krb5p in turn and runs
# tests/vm/krb5.py on each mount; then a sec=sys mount must get nowhere.
# Over TCP, knfsd (rpc.svcgssd with its key) is knfsd.rnfs.test = 10.97.0.1 in the guest's
# namespace and rnfsd (an instance of its own, --keytab, KRB5_CONFIG) is rnfsd.rnfs.test =
# 10.97.0.2 in a network namespace of its own behind the veth pair vkrb0/vkrb1 (the KDC is
# reachable from both). Over RDMA both are SERVER-rdma.rnfs.test = 10.96.0.1, an address of
# veth0 (soft-RoCE's device rxe0), in the guest's namespace, one after the other.
# rpc.gssd runs only during the case: while it runs, the client makes every new NFSv4 lease
# with krb5i, which would change the other cases.
KRB5_VERS=${KRB5_VERS:-"3 4.2"}
KRB5_FLAVORS="krb5 krb5i krb5p"
KRB5_ROWS="$KRB5_FLAVORS krb5posix krb5sys krb5cb"
KRB5_DIR=/run/krb5
KRB5_REALM=RNFS.TEST
KRB5_CLI=10.97.0.1
KRB5_SRV=10.97.0.2
KRB5_RDMA=10.96.0.1
KRB5_NS=rnfskrb
KRB5_STATE=0 # 1 set up, 2 setup failed (KRB5_WHY says why)
KRB5_WHY=
KRB5_USERS="alice:2101 bob:2102"
KRB5_NOTICKET=carol:2103
# the krb5posix row: tests/vm/posixdiff.py's users (uid 1001-1004; its groups 2000, 2100 and
# 3000) as local users with principals of their names and tickets, and root with a user
# principal (root@REALM, which both servers map to uid 0: the export has no_root_squash), as a
# site gives root a ticket of its own with rpc.gssd -n
KRB5_PX_USERS="pxa:1001:2000 pxb:1002 pxc:1003 pxd:1004:2100"
KRB5_PX_GROUPS="pxg2000:2000 pxg2100:2100 pxg3000:3000"
KRB5_POSIX_FLAVOR=${KRB5_POSIX_FLAVOR-krb5p} # the flavor of the krb5posix row's mount ("": SKIP)
KRB5_POSIX_TRANSPORTS=${KRB5_POSIX_TRANSPORTS-tcp rdma} # where the krb5posix row runs (--quick: tcp)
KRB5_MIB=${KRB5_MIB:-4}
KRB5_PERF_MIB=${KRB5_PERF_MIB:-0} # > 0: krb5.py's perf step on each mount (figures, both servers)
KRB5_PERF_RUNS=${KRB5_PERF_RUNS:-3}
KRB5_PROFILE=${KRB5_PROFILE:-0} # 1: and the profile case's perf record on each mount (with KRB5_PERF_MIB)
# workload.py's cases each user runs as themselves on the mounts of these flavors
KRB5_WORKLOAD=${KRB5_WORKLOAD-smoke,bigfile,files1000,rename,lsdir,symlink,hardlink,attrs,fsync,fsx,tar,sparse}
KRB5_WORKLOAD_FLAVORS=${KRB5_WORKLOAD_FLAVORS-krb5 krb5i krb5p}
KRB5_RUST_LOG=${KRB5_RUST_LOG:-info,sunrpc::gss=debug,gss=debug}
KRB5_GSSD_PID=
KRB5_SVCGSSD_PID=
KRB5_IDMAPD_PID=
KRB5_RNFSD_PID=
KRB5_RNFSD_METRICS=
krb5_env() { # command...: with the realm's configuration
	env KRB5_CONFIG=$KRB5_DIR/krb5.conf KRB5_KDC_PROFILE=$KRB5_DIR/kdc.conf "$@"
}
krb5_setup() { # once per guest: network, hosts, KDC, keys, users, tickets, rpc_pipefs
	[ "$KRB5_STATE" = 1 ] && return 0
	[ "$KRB5_STATE" = 2 ] && return 1
	KRB5_STATE=2
	local d=$KRB5_DIR u name uid p
	for p in krb5kdc kdb5_util kadmin.local kinit klist rpc.gssd rpc.svcgssd useradd groupadd; do
		command -v $p >/dev/null ||
			{ KRB5_WHY="$p missing (tests/vm/run installs krb5-kdc krb5-admin-server krb5-user nfs-common)"; return 1; }
	done
	modprobe auth_rpcgss && modprobe rpcsec_gss_krb5 || { KRB5_WHY="modprobe rpcsec_gss_krb5 failed"; return 1; }
	mkdir -p $d /run/rpc_pipefs
	ip netns add $KRB5_NS && ip link add vkrb0 type veth peer name vkrb1 &&
		ip link set vkrb1 netns $KRB5_NS && ip addr add $KRB5_CLI/24 dev vkrb0 && ip link set vkrb0 up &&
		ip netns exec $KRB5_NS ip addr add $KRB5_SRV/24 dev vkrb1 &&
		ip netns exec $KRB5_NS ip link set vkrb1 up && ip netns exec $KRB5_NS ip link set lo up ||
		{ KRB5_WHY="network namespace setup failed"; return 1; }
	[ "$RDMA_OK" = 1 ] && { ip addr add $KRB5_RDMA/24 dev veth0 || say "krb5: cannot add $KRB5_RDMA to veth0"; }
	# the names the mounts use, and one for the client's key (rpc.gssd also takes any
	# host/ key of the keytab when none matches the canonical host name, here "localhost")
	cat >>/etc/hosts <<-EOF
		$KRB5_CLI knfsd.rnfs.test
		$KRB5_SRV rnfsd.rnfs.test
		$KRB5_RDMA knfsd-rdma.rnfs.test
		$KRB5_RDMA rnfsd-rdma.rnfs.test
		$KRB5_CLI rnfs-vm.rnfs.test
	EOF
	cat >$d/krb5.conf <<-EOF
		[libdefaults]
		 default_realm = $KRB5_REALM
		 dns_lookup_kdc = false
		 dns_lookup_realm = false
		 rdns = false
		 dns_canonicalize_hostname = false
		 udp_preference_limit = 1
		[realms]
		 $KRB5_REALM = {
		  kdc = $KRB5_CLI:88
		 }
		[domain_realm]
		 .rnfs.test = $KRB5_REALM
		 rnfs.test = $KRB5_REALM
	EOF
	# rpc.gssd's helpers, rpc.svcgssd's idmapping and kinit read /etc/krb5.conf; the guest's
	# /etc is an overlay, the host's files stay as they are
	cp $d/krb5.conf /etc/krb5.conf
	# rpc.svcgssd maps alice@REALM to the local user alice only when REALM is one of
	# libnfsidmap's Local-Realms, by default the upper-cased NFSv4 domain (the DNS domain,
	# here none): without this knfsd makes every user the anonymous one
	# (Debian's nobody group is "nogroup", which rpc.idmapd, knfsd's name mapper, must be told)
	printf '[General]\nDomain = rnfs.test\nLocal-Realms = %s\n[Mapping]\nNobody-User = nobody\nNobody-Group = nogroup\n' \
		$KRB5_REALM >/etc/idmapd.conf
	cat >$d/kdc.conf <<-EOF
		[kdcdefaults]
		 kdc_ports = 88
		 kdc_tcp_ports = 88
		[realms]
		 $KRB5_REALM = {
		  database_name = $d/principal
		  key_stash_file = $d/stash
		  acl_file = $d/kadm5.acl
		  max_life = 10h 0m 0s
		  max_renewable_life = 1d
		 }
		[logging]
		 kdc = FILE:$d/kdc.log
	EOF
	: >$d/kadm5.acl
	krb5_env kdb5_util create -s -r $KRB5_REALM -P rnfs-test-master >>$d/setup.log 2>&1 ||
		{ KRB5_WHY="kdb5_util create failed"; return 1; }
	setsid env KRB5_CONFIG=$d/krb5.conf KRB5_KDC_PROFILE=$d/kdc.conf krb5kdc -n -r $KRB5_REALM \
		>>$d/kdc.out 2>&1 </dev/null &
	for _ in $(seq 150); do
		(exec 3<>/dev/tcp/$KRB5_CLI/88) 2>/dev/null && break
		sleep 0.2
	done
	(exec 3<>/dev/tcp/$KRB5_CLI/88) 2>/dev/null || { KRB5_WHY="krb5kdc does not listen on $KRB5_CLI:88"; return 1; }
	# the same port from rnfsd's namespace
	ip netns exec $KRB5_NS bash -c "(exec 3<>/dev/tcp/$KRB5_CLI/88)" 2>/dev/null ||
		say "krb5: the KDC is not reachable from the namespace $KRB5_NS"
	for p in nfs/knfsd.rnfs.test:knfsd nfs/knfsd-rdma.rnfs.test:knfsd nfs/rnfsd.rnfs.test:rnfsd \
		nfs/rnfsd-rdma.rnfs.test:rnfsd host/rnfs-vm.rnfs.test:client alice:alice bob:bob root:root \
		$(for u in $KRB5_PX_USERS; do echo "${u%%:*}:${u%%:*}"; done); do
		krb5_env kadmin.local -r $KRB5_REALM -q "addprinc -randkey ${p%%:*}" >>$d/setup.log 2>&1 &&
			krb5_env kadmin.local -r $KRB5_REALM -q "ktadd -k $d/${p#*:}.keytab ${p%%:*}" >>$d/setup.log 2>&1
		krb5_env klist -k $d/${p#*:}.keytab 2>/dev/null | grep -q "${p%%:*}@$KRB5_REALM" ||
			{ KRB5_WHY="no key for ${p%%:*} in $d/${p#*:}.keytab"; return 1; }
	done
	for u in $KRB5_USERS $KRB5_NOTICKET; do
		name=${u%%:*} uid=${u#*:}
		if [ "$(id -u "$name" 2>/dev/null)" != "$uid" ]; then
			groupadd -g "$uid" "$name" && useradd -u "$uid" -g "$uid" -M -d /nonexistent \
				-s /usr/sbin/nologin "$name" ||
				{ KRB5_WHY="useradd $name ($uid) failed"; return 1; }
		fi
	done
	for u in $KRB5_PX_GROUPS; do
		[ "$(getent group "${u#*:}" | cut -d: -f1)" = "${u%%:*}" ] || groupadd -g "${u#*:}" "${u%%:*}" ||
			{ KRB5_WHY="groupadd ${u%%:*} (${u#*:}) failed"; return 1; }
	done
	local extra
	for u in $KRB5_PX_USERS; do
		IFS=: read -r name uid extra <<<"$u"
		if [ "$(id -u "$name" 2>/dev/null)" != "$uid" ]; then
			groupadd -g "$uid" "$name" && useradd -u "$uid" -g "$uid" ${extra:+-G "$extra"} -M \
				-d /nonexistent -s /usr/sbin/nologin "$name" ||
				{ KRB5_WHY="useradd $name ($uid) failed"; return 1; }
		fi
	done
	for u in $KRB5_USERS $KRB5_PX_USERS; do
		IFS=: read -r name uid extra <<<"$u"
		krb5_env kinit -k -t $d/$name.keytab -c FILE:/tmp/krb5cc_$uid "$name@$KRB5_REALM" \
			>>$d/setup.log 2>&1 && chown "$uid:$uid" /tmp/krb5cc_$uid ||
			{ KRB5_WHY="kinit $name failed"; return 1; }
	done
	mountpoint -q /run/rpc_pipefs || mount -t rpc_pipefs sunrpc /run/rpc_pipefs ||
		{ KRB5_WHY="cannot mount rpc_pipefs"; return 1; }
	say "krb5: realm $KRB5_REALM, KDC $KRB5_CLI:88; users $KRB5_USERS with tickets, $KRB5_NOTICKET without"
	KRB5_STATE=1
}
krb5_pid_has() { # pid pattern: whether the process holds an open file matching the pattern
	ls -l "/proc/$1/fd" 2>/dev/null | grep -q -- "$2"
}
krb5_gssd_start() { # [-n]: root's calls with root's own ticket, not the machine credential
	krb5_gssd_start_with $KRB5_DIR/client.keytab "$@"
}
krb5_gssd_start_with() { # keytab [-n]: with the machine credential from keytab
	cp "$1" /etc/krb5.keytab
	shift
	setsid env KRB5_CONFIG=$KRB5_DIR/krb5.conf rpc.gssd -f -vvv -p /run/rpc_pipefs "$@" \
		>>$KRB5_DIR/gssd.log 2>&1 </dev/null &
	KRB5_GSSD_PID=$!
	# the kernel asks rpc.gssd only once it holds the gssd pipe open
	for _ in $(seq 100); do
		krb5_pid_has $KRB5_GSSD_PID rpc_pipefs/gssd && return 0
		kill -0 $KRB5_GSSD_PID 2>/dev/null || break
		sleep 0.2
	done
	return 1
}
krb5_gssd_stop() {
	[ -n "$KRB5_GSSD_PID" ] && { kill $KRB5_GSSD_PID; wait $KRB5_GSSD_PID; } 2>/dev/null
	KRB5_GSSD_PID=
	rm -f /etc/krb5.keytab
}
krb5_name() { # server transport: the name the client mounts
	if [ "$2" = rdma ]; then echo "$1-rdma.rnfs.test"; else echo "$1.rnfs.test"; fi
}
krb5_knfsd_up() { # vers transport
	local c=${KRB5_CLI%.*}.0/24
	[ "$2" = rdma ] && c=${KRB5_RDMA%.*}.0/24
	mkdir -p /srv/krb5-knfsd && mount -t tmpfs -o mode=0777 tmpfs /srv/krb5-knfsd || return 1
	exportfs -o rw,insecure,no_subtree_check,no_root_squash,fsid=0,sec=krb5p:krb5i:krb5 \
		"$c:/srv/krb5-knfsd" || return 1
	KRB5_KNFSD_CLIENTS=$c
	# NFSv4 owners under Kerberos go by name (the client sends numeric ids only with AUTH_SYS):
	# knfsd maps them through rpc.idmapd, rnfsd with --idmap-domain; both with the domain of
	# the client's /etc/idmapd.conf
	setsid rpc.idmapd -f -vvv -p /run/rpc_pipefs >>$KRB5_DIR/idmapd.log 2>&1 </dev/null &
	KRB5_IDMAPD_PID=$!
	setsid env KRB5_CONFIG=$KRB5_DIR/krb5.conf KRB5_KTNAME=$KRB5_DIR/knfsd.keytab rpc.svcgssd -f -vvv \
		-p "nfs/$(krb5_name knfsd "$2")@$KRB5_REALM" >>$KRB5_DIR/svcgssd.log 2>&1 </dev/null &
	KRB5_SVCGSSD_PID=$!
	for _ in $(seq 100); do
		krb5_pid_has $KRB5_SVCGSSD_PID auth.rpcsec.init && return 0
		kill -0 $KRB5_SVCGSSD_PID 2>/dev/null || break
		sleep 0.2
	done
	say "krb5: rpc.svcgssd did not start"
	return 1
}
krb5_knfsd_down() { # vers transport
	[ -n "$KRB5_SVCGSSD_PID" ] && { kill $KRB5_SVCGSSD_PID; wait $KRB5_SVCGSSD_PID; } 2>/dev/null
	KRB5_SVCGSSD_PID=
	[ -n "$KRB5_IDMAPD_PID" ] && { kill $KRB5_IDMAPD_PID; wait $KRB5_IDMAPD_PID; } 2>/dev/null
	KRB5_IDMAPD_PID=
	exportfs -u "$KRB5_KNFSD_CLIENTS:/srv/krb5-knfsd"
	umount /srv/krb5-knfsd
}
krb5_rnfsd_up() { # vers transport
	local log=/run/rnfsd-krb5-$1-$2.log netns="ip netns exec $KRB5_NS" c=${KRB5_CLI%.*}.0/24
	local listen=(--no-rdma)
	KRB5_RNFSD_METRICS=$KRB5_SRV:9466
	if [ "$2" = rdma ]; then # in the guest's namespace, where soft-RoCE is
		netns="" c=${KRB5_RDMA%.*}.0/24 listen=() KRB5_RNFSD_METRICS=$KRB5_RDMA:9466
	fi
	mkdir -p /srv/krb5-rnfsd && mount -t tmpfs -o mode=0777 tmpfs /srv/krb5-rnfsd || return 1
	echo "/srv/krb5-rnfsd $c(rw,insecure,no_subtree_check,no_root_squash,fsid=0,sec=krb5p:krb5i:krb5)" \
		>/run/rnfsd-krb5.exports
	: >$log
	# RNFSD_ENV comes last: RNFSD_ENV=RUST_LOG=debug wins over the case's own filter
	setsid $netns env KRB5_CONFIG=$KRB5_DIR/krb5.conf RUST_LOG=$KRB5_RUST_LOG \
		$RNFSD_ENV "$RNFSD" --exports /run/rnfsd-krb5.exports --keytab $KRB5_DIR/rnfsd.keytab \
		--state-dir "$(mktemp -d /run/rnfsd-krb5-state.XXXX)" --listen 0.0.0.0:2049 "${listen[@]}" \
		--metrics $KRB5_RNFSD_METRICS --admin-socket /run/rnfsd-krb5.sock --lease-time 15 \
		--idmap-domain rnfs.test $RNFSD_ARGS \
		>>$log 2>&1 </dev/null &
	KRB5_RNFSD_PID=$!
	for _ in $(seq 600); do
		grep -q "rnfsd ready:" $log && break
		kill -0 $KRB5_RNFSD_PID 2>/dev/null || break
		sleep 0.2
	done
	if ! grep -q "rnfsd ready:" $log; then
		say "krb5: rnfsd did not get ready"
		dump "rnfsd-krb5.log" $log 20
		return 1
	fi
	say "krb5: $(grep -o 'rnfsd ready:.*' $log | head -1)"
	if [ "$2" = rdma ] && ! grep -q "rnfsd ready:.*rdma://" $log; then
		say "krb5: rnfsd has no RDMA listener"
		return 1
	fi
}
krb5_rnfsd_down() { # vers transport
	local log=/run/rnfsd-krb5-$1-$2.log m=/run/rnfsd-krb5-$1-$2.metrics
	python3 - "http://$KRB5_RNFSD_METRICS/metrics" >$m 2>&1 <<-'EOF'
		import sys, urllib.request
		print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")
	EOF
	say "krb5: rnfsd's RPCSEC_GSS events: $(grep -E '^rnfs_rpc_events_total\{.*gss' $m |
		sed 's/^rnfs_rpc_events_total{kind="\(.*\)"} /\1=/' | tr '\n' ' ')"
	[ -n "$KRB5_RNFSD_PID" ] && kill $KRB5_RNFSD_PID 2>/dev/null
	for _ in $(seq 50); do kill -0 $KRB5_RNFSD_PID 2>/dev/null || break; sleep 0.2; done
	kill -9 $KRB5_RNFSD_PID 2>/dev/null
	wait $KRB5_RNFSD_PID 2>/dev/null
	KRB5_RNFSD_PID=
	save $log $m
	umount /srv/krb5-rnfsd
}
krb5_evidence() { # server vers transport
	dmesg_tail 20
	dump "gssd.log" $KRB5_DIR/gssd.log 30
	[ "$1" = knfsd ] && dump "svcgssd.log" $KRB5_DIR/svcgssd.log 20
	[ "$1" = rnfsd ] && dump "rnfsd-krb5.log" /run/rnfsd-krb5-$2-$3.log 30
	dump "kdc.log" $KRB5_DIR/kdc.log 10
}
krb5_posix() { # server vers transport mount-options source: the krb5posix row
	# tests/vm/posixdiff.py (the workload's posix case) on a Kerberos mount, each step as its
	# user with that user's ticket, root's with root@REALM's (rpc.gssd -n, restarted for this
	# row: the other rows' root is the machine credential); the NFSv4 ACLs' who-names are
	# NAME@rnfs.test. The same steps and comparison as the posix case under AUTH_SYS
	local s=$1 v=$2 t=$3 t0 out rc mnt=/mnt/krb5 log=/tmp/krb5posix-$1-$2-$3.log
	t0=$(now)
	if [ -z "$KRB5_POSIX_FLAVOR" ]; then
		result "$s" "$v" "$t" krb5posix SKIP 0 "KRB5_POSIX_FLAVOR is empty"
		return
	fi
	case " $KRB5_POSIX_TRANSPORTS " in
	*" $t "*) ;;
	*)
		result "$s" "$v" "$t" krb5posix SKIP 0 "runs over ${KRB5_POSIX_TRANSPORTS// /,} (KRB5_POSIX_TRANSPORTS)"
		return
		;;
	esac
	krb5_gssd_stop
	if ! krb5_env kinit -k -t $KRB5_DIR/root.keytab -c FILE:/tmp/krb5cc_0 "root@$KRB5_REALM" \
		>>$KRB5_DIR/setup.log 2>&1 || ! krb5_gssd_start -n; then
		result "$s" "$v" "$t" krb5posix FAIL "$(elapsed "$t0")" "kinit root or rpc.gssd -n failed"
		krb5_gssd_stop
		rm -f /tmp/krb5cc_0
		krb5_gssd_start
		return
	fi
	if ! out=$(timeout 120 mount -t nfs -o "$4,sec=$KRB5_POSIX_FLAVOR" "$5" $mnt 2>&1); then
		result "$s" "$v" "$t" krb5posix FAIL "$(elapsed "$t0")" "mount -o $4,sec=$KRB5_POSIX_FLAVOR $5 failed: $(echo "$out" | tr '\n' ' ')"
	else
		say "krb5: $s mounted $5 for the posix case: $(grep " $mnt " /proc/mounts | cut -d' ' -f4)"
		: >"$log"
		# (its RESULT line is not echoed: the report would take it for the posix row)
		out=$(timeout -k 10 900 python3 "$REPO/tests/vm/workload.py" --dir $mnt/posix-krb5 --cases posix \
			--label "server=$s vers=$v transport=$t" --vers "$v" --transport "$t" \
			--idmap-domain rnfs.test --log "$log" 2>&1)
		rc=$?
		sed "s/^/krb5 $s $v $t posix| /" "$log" | tail -n 40
		rm -rf $mnt/posix-krb5
		timeout 120 umount $mnt >/dev/null 2>&1 || umount -l $mnt >/dev/null 2>&1
		case "$rc $out" in
		"0 "*status=PASS*) result "$s" "$v" "$t" krb5posix PASS "$(elapsed "$t0")" "-" ;;
		*)
			result "$s" "$v" "$t" krb5posix FAIL "$(elapsed "$t0")" "posix case as Kerberos users (sec=$KRB5_POSIX_FLAVOR), exit $rc: $(echo "$out" | grep -o 'status=.*' | tail -1 | cut -c1-400)"
			krb5_evidence "$s" "$v" "$t"
			;;
		esac
	fi
	save "$log"
	krb5_gssd_stop
	rm -f /tmp/krb5cc_0
	krb5_gssd_start
}
krb5_cb() { # server vers transport: the krb5cb row, NFSv4.0 callbacks under RPCSEC_GSS
	# (tests/vm/krb5cb.py). Once per server, with the last of KRB5_VERS over TCP (NFSv4.0
	# callbacks are TCP only). The client's callback service accepts contexts through
	# rpc.svcgssd, for the principal the client introduced itself as, and checks that the
	# callback comes from the principal it mounted. One guest is client and knfsd's host: for
	# this row the client's machine credential is the host's nfs/ key (knfsd.keytab, first
	# nfs/knfsd.rnfs.test, which rpc.gssd takes as nfs/<any name>), and rpc.svcgssd accepts
	# with any nfs/ key of it (no -p): knfsd calls back through rpc.gssd as that same key,
	# rnfsd as nfs/rnfsd.rnfs.test from its own keytab.
	local s=$1 v=$2 t=$3 t0 out rc name mnt=/mnt/krb5cb mnt3=/mnt/krb5cb3
	KRB5_CB_OK=0
	if [ "$t" != tcp ] || [ "$v" != "${KRB5_VERS##* }" ]; then
		result "$s" "$v" "$t" krb5cb SKIP 0 "runs once per server, with vers ${KRB5_VERS##* } over TCP"
		return
	fi
	t0=$(now)
	krb5_gssd_stop
	[ -n "$KRB5_SVCGSSD_PID" ] && { kill $KRB5_SVCGSSD_PID; wait $KRB5_SVCGSSD_PID; } 2>/dev/null
	# rpc.gssd keeps the machine credential's tickets: those of host/rnfs-vm must not serve
	rm -f /tmp/krb5ccmachine_*
	setsid env KRB5_CONFIG=$KRB5_DIR/krb5.conf KRB5_KTNAME=$KRB5_DIR/knfsd.keytab rpc.svcgssd -f -vvv \
		>>$KRB5_DIR/svcgssd.log 2>&1 </dev/null &
	KRB5_SVCGSSD_PID=$!
	if ! krb5_gssd_start_with $KRB5_DIR/knfsd.keytab; then
		result "$s" "$v" "$t" krb5cb FAIL "$(elapsed "$t0")" "rpc.gssd did not start"
		return
	fi
	for _ in $(seq 100); do
		krb5_pid_has $KRB5_SVCGSSD_PID auth.rpcsec.init && break
		sleep 0.2
	done
	name=$(krb5_name "$s" tcp)
	mkdir -p $mnt $mnt3
	if ! out=$(timeout 120 mount -t nfs -o vers=4.0,proto=tcp,sec=krb5i "$name:/" $mnt 2>&1) &&
		[ "$s" = knfsd ]; then
		# knfsd (the reference) refused this mount once in CI ("access denied by server",
		# 1.2 s into the row, 2026-11-29; not in 12 runs since): its evidence, then one more try.
		# rnfsd's mount gets no second try
		say "krb5: knfsd's vers=4.0 sec=krb5i mount failed: $(echo "$out" | tr '\n' ' '); evidence, then once more"
		krb5_evidence "$s" "$v" "$t"
		sleep 3
		out=$(timeout 120 mount -t nfs -o vers=4.0,proto=tcp,sec=krb5i "$name:/" $mnt 2>&1)
	fi
	if ! mountpoint -q $mnt; then
		result "$s" "$v" "$t" krb5cb FAIL "$(elapsed "$t0")" "mount -o vers=4.0,sec=krb5i $name:/ failed: $(echo "$out" | tr '\n' ' ')"
		krb5_evidence "$s" "$v" "$t"
		return
	fi
	if ! out=$(timeout 120 mount -t nfs -o vers=3,proto=tcp,sec=krb5i "$name:/srv/krb5-$s" $mnt3 2>&1); then
		result "$s" "$v" "$t" krb5cb FAIL "$(elapsed "$t0")" "mount -o vers=3,sec=krb5i $name:/srv/krb5-$s failed: $(echo "$out" | tr '\n' ' ')"
		umount $mnt
		return
	fi
	out=$(timeout -k 10 120 python3 "$REPO/tests/vm/krb5cb.py" --v4 $mnt --v3 $mnt3 \
		--user alice:2101:2101 --server "$s" \
		${KRB5_RNFSD_PID:+--metrics-url "http://$KRB5_RNFSD_METRICS/metrics"} 2>&1)
	rc=$?
	echo "$out" | sed "s/^/krb5 $s $v $t krb5cb| /"
	timeout 60 umount $mnt3 >/dev/null 2>&1 || umount -l $mnt3
	timeout 60 umount $mnt >/dev/null 2>&1 || umount -l $mnt
	if [ "$rc" = 0 ]; then
		KRB5_CB_OK=1
		result "$s" "$v" "$t" krb5cb PASS "$(elapsed "$t0")" "-"
	else
		result "$s" "$v" "$t" krb5cb FAIL "$(elapsed "$t0")" "$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')"
		krb5_evidence "$s" "$v" "$t"
		dump "svcgssd.log" $KRB5_DIR/svcgssd.log 20
	fi
	# the next combination's rows take the client's own key again
	if [ "$s" = rnfsd ]; then
		{ kill $KRB5_SVCGSSD_PID; wait $KRB5_SVCGSSD_PID; } 2>/dev/null
		KRB5_SVCGSSD_PID=
	fi
	krb5_gssd_stop
	rm -f /tmp/krb5ccmachine_*
}
krb5_case() { # server vers transport: the krb5, krb5i, krb5p, krb5posix, krb5sys and krb5cb rows
	case ",$CASES," in *,krb5,*) ;; *) return 0 ;; esac
	local s=$1 v=$2 t=$3 f t0 t1 out rc opts name path mnt=/mnt/krb5 why mopts skipped
	case " $KRB5_VERS " in *" $v "*) ;; *) v= ;; esac
	if [ -z "$v" ]; then
		for f in $KRB5_ROWS; do
			result "$1" "$2" "$3" $f SKIP 0 "Kerberos: run with vers $(echo $KRB5_VERS | tr ' ' ,) (KRB5_VERS)"
		done
		return 0
	fi
	if [ "$t" = rdma ] && [ "$RDMA_OK" != 1 ]; then
		for f in $KRB5_ROWS; do result "$s" "$v" "$t" $f SKIP 0 "RDMA unavailable in the guest: $RDMA_WHY"; done
		return 0
	fi
	krb5_rows() { # status reason: every row of the case
		local r
		for r in $KRB5_ROWS; do result "$s" "$v" "$t" $r "$1" 0 "$2"; done
	}
	if ! krb5_setup; then
		krb5_rows FAIL "Kerberos setup failed: $KRB5_WHY"
		dump "krb5 setup" $KRB5_DIR/setup.log 20
		return
	fi
	[ "${KRB5_DEBUG:-0}" = 1 ] && echo 0x0010 >/proc/sys/sunrpc/rpc_debug # RPCDBG_AUTH into dmesg
	if ! krb5_gssd_start; then
		krb5_rows FAIL "rpc.gssd did not start"
		dump "gssd.log" $KRB5_DIR/gssd.log 20
		krb5_gssd_stop
		return
	fi
	if ! "krb5_${s}_up" "$v" "$t"; then
		krb5_rows FAIL "$s with sec=krb5p:krb5i:krb5 did not start"
		"krb5_${s}_down" "$v" "$t" >/dev/null 2>&1
		krb5_gssd_stop
		return
	fi
	name=$(krb5_name "$s" "$t") path=/srv/krb5-$s
	[ "$v" != 3 ] && path=/
	mopts=vers=$v,proto=$t
	[ "$t" = rdma ] && mopts=$mopts,port=20049
	mkdir -p $mnt
	# NFSv3 locks go to the lock manager rpcbind names at the server's address; over RDMA rnfsd
	# shares the guest's rpcbind, where the client's own lockd holds NLM (see RNFSD_NS above),
	# so the client's NLM calls never reach rnfsd: its lock step runs over TCP only
	local nolock=()
	[ "$s" = rnfsd ] && [ "$v" = 3 ] && [ "$t" = rdma ] &&
		nolock=(--no-lock "NLM cannot reach rnfsd over RDMA in the guest (it shares the client's rpcbind); v3 locks are checked over TCP")
	# the workload's tar case reads the run's tarball as a user: a copy they may read (the
	# run directory is the host's, mode 0700)
	local wl tarball=$KRB5_DIR/src.tar
	[ -n "$TARBALL" ] && [ -e "$TARBALL" ] && [ ! -e "$tarball" ] && cp "$TARBALL" "$tarball" && chmod 644 "$tarball"
	for f in $KRB5_FLAVORS; do
		t0=$(now)
		wl=()
		case " $KRB5_WORKLOAD_FLAVORS " in *" $f "*)
			[ -n "$KRB5_WORKLOAD" ] && wl=(--workload "$KRB5_WORKLOAD"
				--workload-args "$WORKLOAD_ARGS --vers $v --transport $t --tarball $tarball")
			;;
		esac
		if ! out=$(timeout 120 mount -t nfs -o $mopts,sec=$f "$name:$path" $mnt 2>&1); then
			result "$s" "$v" "$t" $f FAIL "$(elapsed "$t0")" "mount -o $mopts,sec=$f $name:$path failed: $(echo "$out" | tr '\n' ' ')"
			krb5_evidence "$s" "$v" "$t"
			continue
		fi
		opts=$(grep " $mnt " /proc/mounts | cut -d' ' -f4)
		t1=$(elapsed "$t0")
		say "krb5: $s mounted $name:$path in ${t1}s: $opts"
		out=$(timeout -k 10 2400 python3 "$REPO/tests/vm/krb5.py" --dir $mnt --tag "$v-$t-$f" \
			--user alice:2101:2101 --user bob:2102:2102 --noticket carol:2103:2103 \
			--big-mib "$KRB5_MIB" --seed "$SEED" --perf-mib "$KRB5_PERF_MIB" --perf-runs "$KRB5_PERF_RUNS" \
			$([ "$KRB5_PROFILE" = 1 ] && echo --profile) \
			"${nolock[@]}" "${wl[@]}" ${KRB5_RNFSD_PID:+--metrics-url "http://$KRB5_RNFSD_METRICS/metrics"} 2>&1)
		rc=$?
		echo "$out" | sed "s/^/krb5 $s $v $t $f| /"
		skipped=$(echo "$out" | grep "status=SKIP" | sed 's/.*sub=\([^ ]*\).*reason=/skipped \1: /' | tr '\n' ';')
		why=$(echo "$out" | grep "status=FAIL" | sed 's/.*sub=\([^ ]*\).*reason=/\1: /' | tr '\n' ';')
		case ",$opts," in *",sec=$f,"*) ;; *) why="${why}mounted with $opts, not sec=$f;" ;; esac
		if ! out=$(timeout 120 umount $mnt 2>&1); then
			why="${why}umount failed: $(echo "$out" | tr '\n' ' ');"
			timeout 60 umount -f $mnt >/dev/null 2>&1 || umount -l $mnt >/dev/null 2>&1
		fi
		if [ "$rc" = 0 ] && [ -z "$why" ]; then
			result "$s" "$v" "$t" $f PASS "$(elapsed "$t0")" "${skipped:--}"
		else
			result "$s" "$v" "$t" $f FAIL "$(elapsed "$t0")" "${why:-krb5.py exited $rc}"
			krb5_evidence "$s" "$v" "$t"
		fi
	done
	krb5_posix "$s" "$v" "$t" "$mopts" "$name:$path"
	# sec=sys on the krb5-only export: refused at mount, or nothing in it can be read or made
	t0=$(now)
	if out=$(timeout 60 mount -t nfs -o $mopts,sec=sys,retry=0 "$name:$path" $mnt 2>&1); then
		out=$(python3 - $mnt <<-'EOF'
			import errno, os, sys
			def e(fn):
			    try:
			        fn()
			        return "allowed"
			    except OSError as x:
			        return errno.errorcode.get(x.errno, str(x.errno))
			d = sys.argv[1]
			print("list=" + e(lambda: os.listdir(d)),
			      "create=" + e(lambda: os.close(os.open(os.path.join(d, "sys-file"), os.O_CREAT | os.O_WRONLY, 0o644))))
		EOF
		)
		timeout 60 umount $mnt >/dev/null 2>&1 || umount -l $mnt >/dev/null 2>&1
		say "krb5: $s vers=$v transport=$t sec=sys mounted; as root: $out"
		case "$out" in
		*allowed*) result "$s" "$v" "$t" krb5sys FAIL "$(elapsed "$t0")" "a sec=sys mount of the krb5-only export works: $out" ;;
		*) result "$s" "$v" "$t" krb5sys PASS "$(elapsed "$t0")" "-" ;;
		esac
	else
		say "krb5: $s vers=$v transport=$t sec=sys refused: $(echo "$out" | tr '\n' ' ')"
		result "$s" "$v" "$t" krb5sys PASS "$(elapsed "$t0")" "-"
	fi
	# KRB5CB_REPEAT=N: the row again up to N times, until one fails (to catch a rare failure)
	for _ in $(seq "$KRB5CB_REPEAT"); do
		krb5_cb "$s" "$v" "$t"
		[ "$KRB5_CB_OK" = 1 ] || break
	done
	echo 0 >/proc/sys/sunrpc/rpc_debug
	"krb5_${s}_down" "$v" "$t"
	krb5_gssd_stop
	save $KRB5_DIR/gssd.log $KRB5_DIR/svcgssd.log $KRB5_DIR/kdc.log $KRB5_DIR/setup.log $KRB5_DIR/idmapd.log
}

# ---------------------------------------------------------------------------------------------
# knfsd runs once for all combinations; rnfsd is started afresh for each, so that one
# combination's failure (a crash, exhausted descriptors) does not spill into the next
for s in $SERVERS; do
	say "=== server $s"
	up=0
	for combo in $COMBOS; do
		t=${combo%%:*} v=${combo#*:}
		{
			RNFSD_LOG=/run/rnfsd-$v-$t.log
			RNFSD_IN_NS=$([ "$t" = tcp ] && echo 1 || echo 0)
			if [ "$up" = 0 ]; then
				if ! "start_$s"; then
					all_cases "$s" "$v" "$t" FAIL "$s failed to start"
					"stop_$s" >/dev/null 2>&1
					continue
				fi
				up=1
			fi
			run_combo "$s" "$v" "$t"
			if [ "$s" = rnfsd ]; then
				stop_rnfsd
				up=0
			fi
			nlm_case "$s" "$v" "$t"
			pnfs_case "$s" "$v" "$t"
			failover_case "$s" "$v" "$t"
			faults_case "$s" "$v" "$t"
			soak_case "$s" "$v" "$t"
			krb5_case "$s" "$v" "$t"
		}
	done
	[ "$up" = 1 ] && "stop_$s"
	say "=== server $s done"
done
dmesg >/tmp/dmesg.txt
save /tmp/dmesg.txt
say "DONE"
}

main "$@"
