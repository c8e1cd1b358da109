# ip.sh: busybox `ip` over route netlink (AF_NETLINK dumps of links, addresses and routes):
# `ip link show lo`, `ip addr show dev lo` and `ip -4 addr show dev lo` as Linux prints them
# (the MTU and queue length are Reef's own, 1500 and 256, so they print as M and Q; Linux's
# IPv6 lines are left out: Reef has no IPv6), `ip addr` listing lo first, an unknown device,
# and on Reef `ip route` (the default route through 10.0.2.2 and 10.0.2.0/24, both on eth0;
# Linux's routes are the host's) and eth0's address and link.
t=/tmp/ip.$$
norm() { sed 's/ mtu [0-9]* / mtu M /; s/ qlen [0-9]*$/ qlen Q/'; }
no6() { awk '/inet6/ { skip = 2 } skip { skip--; next } { print }'; }

ip link show lo | norm
ip addr show dev lo | no6 | norm
ip -4 addr show dev lo | norm
ip addr | head -1 | grep -q '^1: lo: <LOOPBACK,UP,LOWER_UP>' && echo "ip addr: lo first"
ip addr show dev nosuch0 2>&1

if uname -r | grep -q reef; then
	ip route > $t || echo "ip route failed"
	grep -q '^default via 10\.0\.2\.2 dev eth0 *$' $t && echo "ip route: default via 10.0.2.2 dev eth0"
	grep -q '^10\.0\.2\.0/24 dev eth0 scope link  *src 10\.0\.2\.15 *$' $t &&
		echo "ip route: 10.0.2.0/24 dev eth0 scope link src 10.0.2.15"
	wc -l < $t
	ip -4 addr show dev eth0 > $t
	grep -q '^    inet 10\.0\.2\.15/24 brd 10\.0\.2\.255 scope global eth0$' $t &&
		echo "ip addr: eth0 10.0.2.15/24 brd 10.0.2.255"
	ip link show eth0 > $t
	grep -q '^2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 ' $t && echo "ip link: eth0 up"
	grep -q '^    link/ether \([0-9a-f][0-9a-f]:\)\{5\}[0-9a-f][0-9a-f] brd ff:ff:ff:ff:ff:ff$' $t &&
		echo "ip link: eth0 ether"
else
	echo "ip route: default via 10.0.2.2 dev eth0"
	echo "ip route: 10.0.2.0/24 dev eth0 scope link src 10.0.2.15"
	echo 2
	echo "ip addr: eth0 10.0.2.15/24 brd 10.0.2.255"
	echo "ip link: eth0 up"
	echo "ip link: eth0 ether"
fi
rm -f $t
