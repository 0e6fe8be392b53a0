package safehttp

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// LookupFunc resolves a host name to addresses, like net.Resolver.LookupNetIP with network "ip".
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// defaultLookup uses the system resolver configuration through Go's resolver.
func defaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// dialContext is the Transport's DialContext. It resolves host itself, refuses the whole host when any
// address is blocked (a name that mixes public and private answers is an attack, not an accident), and
// dials the checked address literals in order, so that no second resolution can swap them.
func (c *Client) dialContext(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, badURL("malformed host:port")
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, badURL("port out of range")
	}
	// The Transport detaches dials from the request's cancellation (a dial may serve a later request),
	// so bound the lookup and the dials here with the attempt cap.
	ctx, cancel := context.WithTimeout(ctx, c.policy.Timeout)
	defer cancel()
	rec := recorderFrom(ctx)

	addrs, err := c.resolve(ctx, host, rec)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, addr := range addrs {
		start := time.Now()
		conn, err := c.dial(ctx, network, netip.AddrPortFrom(addr, uint16(port)).String())
		rec.addConnect(time.Since(start))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// resolve returns the checked addresses of host: the literal itself, or every answer of the lookup.
func (c *Client) resolve(ctx context.Context, host string, rec *recorder) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := c.checkAddr(host, addr); err != nil {
			return nil, err
		}
		return []netip.Addr{addr.Unmap()}, nil
	}
	start := time.Now()
	addrs, err := c.lookup(ctx, host)
	rec.addDNS(time.Since(start))
	if err != nil {
		return nil, &Error{Kind: KindDNS, Host: host, Err: err}
	}
	if len(addrs) == 0 {
		return nil, &Error{Kind: KindDNS, Host: host, Reason: "no addresses"}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, addr := range addrs {
		if err := c.checkAddr(host, addr); err != nil {
			return nil, err
		}
		// LookupNetIP may return IPv4 answers in ::ffff: form; dial them as IPv4.
		out = append(out, addr.Unmap())
	}
	return out, nil
}

// control runs on every socket before it connects. The address was checked in dialContext already;
// checking the kernel's view again means a future code path that dials a name, or a dialer that
// rewrites addresses, still cannot reach a blocked range.
func (c *Client) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &Error{Kind: KindBlockedAddress, Reason: "socket address is not an IP address"}
	}
	return CheckAddr(ap.Addr(), c.policy.AllowPrivate)
}
