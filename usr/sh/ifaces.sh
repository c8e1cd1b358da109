# ifaces.sh: busybox's network tools on the kernel's interfaces, routes and sockets (SIOCGIF*
# ioctls, /proc/net): `ifconfig lo` (loopback, 127.0.0.1/8, up and running, counters that grow
# with a connection over 127.0.0.1), an unknown interface, `route -n` (on Reef: the default
# route through 10.0.2.2 and 10.0.2.0/24, both on eth0; Linux's routes are the host's), and
# `netstat -ltn` while `nc -l` listens (its line), then the connection's data and the
# listener gone. Waits for the listener by looking, not by time; prints facts, so the
# output is the same on Reef and Linux.
t=/tmp/ifaces.$$
port=47813

ifconfig lo > $t || echo "ifconfig lo failed"
grep -q '^lo  *Link encap:Local Loopback' $t && echo "ifconfig lo: local loopback"
grep -q '^  *inet addr:127\.0\.0\.1  Mask:255\.0\.0\.0' $t && echo "ifconfig lo: 127.0.0.1/8"
grep -q '^  *UP LOOPBACK RUNNING  MTU:[0-9]*  Metric:1' $t && echo "ifconfig lo: up, running"
grep -q '^  *RX packets:[0-9]* errors:0 dropped:[0-9]* ' $t && echo "ifconfig lo: RX counters"
grep -q '^  *TX packets:[0-9]* errors:0 dropped:[0-9]* ' $t && echo "ifconfig lo: TX counters"
before=$(sed -n 's/^  *RX packets:\([0-9]*\) .*/\1/p' $t)
ifconfig nosuch0 2>&1 | grep -q '^ifconfig: nosuch0: error fetching interface information: Device not found$' &&
	echo "ifconfig nosuch0: no such device"
[ -r /proc/self/net/dev ] && echo "/proc/self/net/dev readable"

route -n > $t || echo "route -n failed"
head -2 $t
if uname -r | grep -q reef; then
	grep -q '^0\.0\.0\.0  *10\.0\.2\.2  *0\.0\.0\.0  *UG  *0  *0  *0 eth0$' $t &&
		echo "route -n: default via 10.0.2.2 on eth0"
	grep -q '^10\.0\.2\.0  *0\.0\.0\.0  *255\.255\.255\.0  *U  *0  *0  *0 eth0$' $t &&
		echo "route -n: 10.0.2.0/24 on eth0"
else
	echo "route -n: default via 10.0.2.2 on eth0"
	echo "route -n: 10.0.2.0/24 on eth0"
fi

# The listener's input is a FIFO held open until the end: busybox nc ends at the end of its
# input too, which from /dev/null could come before the connection's data. In /tmp (Hare when
# the suite runs on it).
in=$t.in
mkfifo $in
nc -l -p $port < $in > $t.got &
exec 3> $in
i=0
until netstat -ltn | grep -q ":$port "; do
	i=$((i + 1))
	if [ $i -gt 200 ]; then
		echo "netstat -ltn: no listener on port $port"
		break
	fi
	sleep 0.05
done
netstat -ltn > $t
head -2 $t
# Linux's busybox nc listens on IPv6's any address (::), which takes IPv4 too; Reef has no IPv6.
if uname -r | grep -q reef; then any='0\.0\.0\.0:'; else any='(0\.0\.0\.0|::):'; fi
grep -Eq "^tcp +0 +0 $any$port +$any\* +LISTEN *$" $t &&
	echo "netstat -ltn: the listener, on any address, LISTEN, queues empty"
echo hello | nc 127.0.0.1 $port
wait
exec 3>&-
cat $t.got
after=$(ifconfig lo | sed -n 's/^  *RX packets:\([0-9]*\) .*/\1/p')
[ "$after" -gt "$before" ] && echo "ifconfig lo: RX packets grew with the connection"
netstat -ltn | grep -q ":$port " || echo "netstat -ltn: the listener is gone"
rm -f $t $t.got $in
