package safehttp

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// CheckURL validates raw as Do would before connecting, without any lookup or request: the scheme
// (https, or http when the policy allows it), no credentials, the host syntax (see ValidateHost),
// AllowedHosts, localhost and metadata names, and an IP-literal host against the blocked ranges. Use it
// when a user registers a webhook endpoint or a source; Do still checks every resolved address.
func (c *Client) CheckURL(raw string) error {
	_, err := c.parseURL(raw)
	return err
}

// parseURL parses raw and checks it with checkURL.
func (c *Client) parseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, badURL("empty URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The *url.Error would repeat the URL; say what is wrong without it.
		return nil, badURL("malformed URL")
	}
	if _, err := c.checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL applies the policy to a parsed URL: the first one and every redirect target. It returns the
// normalised host.
func (c *Client) checkURL(u *url.URL) (string, error) {
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if c.policy.RequireHTTPS {
			return "", badURL("scheme http not allowed: https required")
		}
	case "":
		return "", badURL("missing scheme: want an absolute http or https URL")
	default:
		return "", badURL("scheme not allowed: want http or https")
	}
	if u.Opaque != "" {
		return "", badURL("opaque URL: want scheme://host/path")
	}
	if u.User != nil {
		// Credentials in URLs leak into logs and confuse parsers ("https://allowed@evil"); webhook and
		// source secrets travel in headers.
		return "", badURL("credentials in URL not allowed: send them in a header")
	}
	if u.Host == "" {
		return "", badURL("missing host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", badURL("port out of range")
		}
	}
	hostname := u.Hostname()
	bracketed := strings.HasPrefix(u.Host, "[")
	host, addr, err := parseHost(hostname)
	if err != nil {
		return "", err
	}
	if bracketed != (addr.IsValid() && addr.Is6()) {
		// Brackets hold IPv6 literals only (RFC 3986 §3.2.2), and only they may hold one.
		return "", badURL("host is not a valid hostname or canonical IP literal")
	}
	if !c.policy.hostAllowed(host) {
		return "", &Error{Kind: KindHostNotAllowed, Host: host, Reason: "not on the allowed hosts list"}
	}
	if addr.IsValid() {
		return host, c.checkAddr(host, addr)
	}
	if metadataNames[host] {
		return "", &Error{Kind: KindBlockedAddress, Host: host, Reason: "cloud metadata service name"}
	}
	if isLocalhostName(host) {
		for _, a := range loopbackAddrs {
			if err := c.checkAddr(host, a); err != nil {
				return "", err
			}
		}
	}
	return host, nil
}

// checkAddr applies CheckAddr with the policy's exceptions and names host in the error.
func (c *Client) checkAddr(host string, addr netip.Addr) error {
	if err := CheckAddr(addr, c.policy.AllowPrivate); err != nil {
		e := err.(*Error)
		e.Host = host
		return e
	}
	return nil
}
