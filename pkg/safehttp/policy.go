package safehttp

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Defaults that replace zero values of Policy.
const (
	// DefaultMaxBytes caps a body at 25 MiB: larger than any policy document seen so far, small enough
	// that a hostile endpoint cannot fill a worker's disk or memory.
	DefaultMaxBytes int64 = 25 << 20
	// DefaultTimeout caps one attempt (dial, TLS, headers and body) at 30 s.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRedirects follows at most 5 redirects, fewer than browsers (20) because a document or
	// webhook URL that needs more is misconfigured.
	DefaultMaxRedirects = 5
	// DefaultMaxAttempts makes at most 3 attempts (2 retries) per Do call.
	DefaultMaxAttempts = 3
)

// Policy says what a Client may fetch. The zero value fetches any public http or https URL with the
// defaults above.
type Policy struct {
	// AllowedHosts lists exact host names (case-insensitive) and "*.example.com" wildcards, which match
	// any name below example.com but not example.com itself. Empty allows any host. A listed host is
	// still refused when it resolves to a blocked address.
	AllowedHosts []string
	// AllowPrivate lists the reserved ranges an operator opens for on-premises servers (see ParseCIDRs).
	// Default none. Cloud metadata and unspecified addresses stay blocked even inside these prefixes.
	AllowPrivate []netip.Prefix
	// MaxBytes caps the body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// Timeout caps one attempt, from dial to the last body byte; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects caps the redirects followed; 0 means DefaultMaxRedirects, negative follows none (a
	// redirect response then fails with KindStatus).
	MaxRedirects int
	// MaxAttempts caps the attempts per Do call, first one included; 0 means DefaultMaxAttempts, 1
	// disables retries.
	MaxAttempts int
	// AllowedMIME lists media types ("application/pdf") and type wildcards ("text/*"); empty allows any
	// and also skips the sniffing check. See mime.go for the agreement rule.
	AllowedMIME []string
	// RequireHTTPS refuses http URLs, including redirect targets.
	RequireHTTPS bool
}

// withDefaults returns p with zero values replaced and lists normalised, copied so that the caller's
// later edits do not reach a running Client.
func (p Policy) withDefaults() Policy {
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	switch {
	case p.MaxRedirects == 0:
		p.MaxRedirects = DefaultMaxRedirects
	case p.MaxRedirects < 0:
		p.MaxRedirects = 0
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	hosts := make([]string, 0, len(p.AllowedHosts))
	for _, h := range p.AllowedHosts {
		if h = normalizeName(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	p.AllowedHosts = hosts
	p.AllowPrivate = append([]netip.Prefix(nil), p.AllowPrivate...)
	mimes := make([]string, 0, len(p.AllowedMIME))
	for _, m := range p.AllowedMIME {
		if m = strings.ToLower(strings.TrimSpace(m)); m != "" {
			mimes = append(mimes, m)
		}
	}
	p.AllowedMIME = mimes
	return p
}

// Validate reports entries that can never match: malformed AllowedHosts and AllowedMIME entries and
// invalid AllowPrivate prefixes. New accepts any Policy; call Validate at start-up to fail loudly.
func (p Policy) Validate() error {
	var errs []error
	for _, h := range p.AllowedHosts {
		name := strings.TrimPrefix(normalizeName(h), "*.")
		if err := ValidateHost(name); err != nil {
			errs = append(errs, fmt.Errorf("allowed host %q: not a hostname, IP literal or *.domain wildcard", h))
		}
	}
	for _, pfx := range p.AllowPrivate {
		if err := checkPrefix(pfx); err != nil {
			errs = append(errs, fmt.Errorf("allow-private prefix %s: %w", pfx, err))
		}
	}
	for _, m := range p.AllowedMIME {
		if !validMIMEPattern(strings.ToLower(strings.TrimSpace(m))) {
			errs = append(errs, fmt.Errorf("allowed media type %q: want type/subtype or type/*", m))
		}
	}
	return errors.Join(errs...)
}

// hostAllowed reports whether host (normalised) matches AllowedHosts (normalised by withDefaults).
func (p Policy) hostAllowed(host string) bool {
	if len(p.AllowedHosts) == 0 {
		return true
	}
	for _, pattern := range p.AllowedHosts {
		if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == pattern {
			return true
		}
	}
	return false
}

// ParseCIDRs parses the operator setting <SVC>_ALLOW_PRIVATE_CIDRS: a comma-separated list of CIDR
// prefixes ("10.20.0.0/16, fd12:3456::/48"); a bare address stands for itself (/32 or /128). Blank
// entries are skipped, so "" yields none. Host bits are cleared. An error names the first bad entry.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		var pfx netip.Prefix
		if strings.Contains(entry, "/") {
			p, err := netip.ParsePrefix(entry)
			if err != nil {
				return nil, fmt.Errorf("allow-private CIDR %q: not a CIDR prefix or address", entry)
			}
			pfx = p.Masked()
		} else {
			a, err := netip.ParseAddr(entry)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("allow-private CIDR %q: not a CIDR prefix or address", entry)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		if err := checkPrefix(pfx); err != nil {
			return nil, fmt.Errorf("allow-private CIDR %q: %w", entry, err)
		}
		out = append(out, pfx)
	}
	return out, nil
}

// checkPrefix refuses prefixes that could not work as an exception or would switch the guard off.
func checkPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return errors.New("invalid prefix")
	case p.Addr().Is4In6():
		// Addresses are unmapped before the check, so a ::ffff: prefix would never match.
		return errors.New("IPv4-mapped prefix: write the IPv4 prefix instead")
	case p.Bits() == 0:
		return errors.New("a /0 prefix would disable the SSRF guard")
	}
	return nil
}

// normalizeName lower-cases a host name and drops surrounding space and one trailing dot (an absolute
// name, "example.com.", is the same host).
func normalizeName(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}
