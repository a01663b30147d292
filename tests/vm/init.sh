#!/bin/busybox sh
# /init of the harness's initramfs (built by tests/vm/run). Loads the 9p and overlay modules,
# mounts the host's root read-only over virtio-9p with a tmpfs overlay on top, binds the
# extracted kernel's modules over /lib/modules and switch_roots into the guest script named on
# the kernel command line (rnfs.init=PATH rnfs.plan=PATH rnfs.kmods=PATH, paths on the host).
/bin/busybox mkdir -p /proc /sys /dev /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
	echo "RNFS-VM: initramfs: $*"
	echo "RNFS-VM: FATAL"
	echo o > /proc/sysrq-trigger
	sleep 30
}

for m in $(cat /modules.list); do
	insmod "/modules/$m" || fail "insmod $m failed"
done

GUEST_INIT=
GUEST_PLAN=
GUEST_KMODS=
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	rnfs.init=*) GUEST_INIT=${arg#rnfs.init=} ;;
	rnfs.plan=*) GUEST_PLAN=${arg#rnfs.plan=} ;;
	rnfs.kmods=*) GUEST_KMODS=${arg#rnfs.kmods=} ;;
	esac
done
[ -n "$GUEST_INIT" ] || fail "no rnfs.init= on the kernel command line"

mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /lower ||
	fail "cannot mount the host root over 9p"
mount -t tmpfs -o mode=0755 rw /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
	fail "cannot mount the overlay"
if [ -n "$GUEST_KMODS" ]; then
	mkdir -p /newroot/lib/modules
	mount -o bind "/lower$GUEST_KMODS" /newroot/lib/modules || fail "cannot bind $GUEST_KMODS"
fi
[ -e "/newroot$GUEST_INIT" ] || fail "$GUEST_INIT not found in the host root"

umount /proc /sys
mount --move /dev /newroot/dev 2>/dev/null || umount /dev
exec switch_root /newroot /bin/bash "$GUEST_INIT" "$GUEST_PLAN"
