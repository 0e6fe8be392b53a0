package audit

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// authChallenge is one challenge of a WWW-Authenticate field (RFC 9110 §11.6.1): an auth-scheme
// followed by either a token68 or a list of auth-params.
type authChallenge struct {
	// Scheme is the auth-scheme as sent; schemes compare case-insensitively.
	Scheme string
	// Token68 is the challenge's token68, "" when it has auth-params or nothing.
	Token68 string
	// Params are the auth-params, names lower-cased (they compare case-insensitively), values with
	// quoted-string escapes undone; nil when the challenge has none.
	Params map[string]string
}

// bearerChallenge returns the first Bearer challenge of cs.
func bearerChallenge(cs []authChallenge) (authChallenge, bool) {
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "Bearer") {
			return c, true
		}
	}
	return authChallenge{}, false
}

// parseWWWAuthenticate parses the values of an answer's WWW-Authenticate fields:
//
//	WWW-Authenticate = #challenge
//	challenge        = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//	auth-param       = token BWS "=" BWS ( token / quoted-string )
//	token68          = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//
// A comma separates both challenges and the auth-params of one challenge; what follows a comma is
// an auth-param when it reads `token BWS "=" BWS (token / quoted-string)`, a new challenge
// otherwise. A value that breaks the grammar stops the parse: the challenges read before it are
// returned with the error, since a server that writes its first challenge well is still useful.
func parseWWWAuthenticate(values []string) ([]authChallenge, error) {
	var out []authChallenge
	for _, v := range values {
		cs, err := parseChallenges(v)
		out = append(out, cs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// authParser reads one field value.
type authParser struct {
	s string
	i int
}

func parseChallenges(s string) ([]authChallenge, error) {
	p := &authParser{s: s}
	var out []authChallenge
	for {
		// Empty list elements and whitespace around commas are allowed (RFC 9110 §5.6.1).
		p.skipSeparators()
		if p.eof() {
			return out, nil
		}
		c, err := p.challenge()
		if err != nil {
			return out, err
		}
		out = append(out, c)
		p.skipOWS()
		if p.eof() {
			return out, nil
		}
		if p.s[p.i] != ',' {
			return out, p.errorf("expected a comma between challenges")
		}
	}
}

func (p *authParser) eof() bool { return p.i >= len(p.s) }

func (p *authParser) errorf(format string, args ...any) error {
	return fmt.Errorf("WWW-Authenticate, byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// skipOWS skips optional whitespace (SP and HTAB).
func (p *authParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// skipSeparators skips whitespace and commas: the empty elements of a list.
func (p *authParser) skipSeparators() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == ',') {
		p.i++
	}
}

// token reads an RFC 9110 token, "" when none starts here.
func (p *authParser) token() string {
	j := p.i
	for j < len(p.s) && isTchar(p.s[j]) {
		j++
	}
	t := p.s[p.i:j]
	p.i = j
	return t
}

// challenge reads one challenge; p is at its auth-scheme.
func (p *authParser) challenge() (authChallenge, error) {
	scheme := p.token()
	if scheme == "" {
		return authChallenge{}, p.errorf("expected an auth-scheme")
	}
	c := authChallenge{Scheme: scheme}
	afterScheme := p.i
	p.skipOWS()
	if p.eof() || p.s[p.i] == ',' {
		p.i = afterScheme
		return c, nil
	}
	if p.i == afterScheme {
		return c, p.errorf("expected a space after the auth-scheme %q", scheme)
	}
	if !p.atParam() {
		c.Token68 = p.token68()
		if c.Token68 == "" {
			return c, p.errorf("expected a token68 or an auth-param after %q", scheme)
		}
		return c, nil
	}
	c.Params = map[string]string{}
	for {
		name, value, err := p.param()
		if err != nil {
			return c, err
		}
		key := strings.ToLower(name)
		if _, dup := c.Params[key]; dup {
			// "Each parameter name MUST only occur once per challenge" (§11.2): a second
			// resource_metadata would leave the client to guess.
			return c, p.errorf("the parameter %q occurs twice in one challenge", name)
		}
		c.Params[key] = value
		// After an auth-param: the end, or a comma and then another auth-param of this challenge
		// or the next challenge, which the caller reads.
		end := p.i
		p.skipOWS()
		if p.eof() {
			return c, nil
		}
		if p.s[p.i] != ',' {
			return c, p.errorf("expected a comma after the parameter %q", name)
		}
		p.skipSeparators()
		if p.eof() || !p.atParam() {
			p.i = end
			return c, nil
		}
	}
}

// atParam reports, without moving, whether an auth-param starts here: a token, BWS, "=", BWS and
// a token or a quoted-string. A token68 with padding ("abc=", "abc==") is not one.
func (p *authParser) atParam() bool {
	save := p.i
	defer func() { p.i = save }()
	if p.token() == "" {
		return false
	}
	p.skipOWS()
	if p.eof() || p.s[p.i] != '=' {
		return false
	}
	p.i++
	p.skipOWS()
	return !p.eof() && (p.s[p.i] == '"' || isTchar(p.s[p.i]))
}

// param reads one auth-param.
func (p *authParser) param() (name, value string, err error) {
	name = p.token()
	p.skipOWS()
	p.i++ // "=", as atParam saw
	p.skipOWS()
	if p.s[p.i] == '"' {
		value, err = p.quoted()
		return name, value, err
	}
	return name, p.token(), nil
}

// quoted reads a quoted-string and undoes its quoted-pairs:
//
//	quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
//	qdtext        = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text
//	quoted-pair   = "\" ( HTAB / SP / VCHAR / obs-text )
func (p *authParser) quoted() (string, error) {
	p.i++ // the opening DQUOTE
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.errorf("a quoted-string ends inside an escape")
			}
			if n := p.s[p.i+1]; n == '\t' || n == ' ' || (n >= 0x21 && n != 0x7f) {
				b.WriteByte(n)
				p.i += 2
				continue
			}
			return "", p.errorf("a control character is escaped in a quoted-string")
		case c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e) || c >= 0x80:
			b.WriteByte(c)
			p.i++
		default:
			return "", p.errorf("a control character in a quoted-string")
		}
	}
	return "", p.errorf("a quoted-string is not closed")
}

// token68 reads a token68, "" when none starts here.
func (p *authParser) token68() string {
	j := p.i
	for j < len(p.s) && isToken68Char(p.s[j]) {
		j++
	}
	if j == p.i {
		return ""
	}
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	t := p.s[p.i:j]
	p.i = j
	return t
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// isToken68Char reports whether c may appear in a token68 before its padding.
func isToken68Char(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

// errNotURL is a URL the comparison cannot use.
var errNotURL = errors.New("not an absolute http(s) URL without credentials or fragment")

// normalizeURL returns raw in the form two URLs of one resource share: scheme and host lower-case,
// the scheme's default port removed, a trailing slash (or an empty path) ignored. The path keeps its
// case and escaping, and the query stays: RFC 9728 compares resource identifiers as strings, and
// this only forgives what clients and servers commonly rewrite.
func normalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || strings.Contains(raw, "#") {
		return "", errNotURL
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return "", errNotURL
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", errNotURL
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	out := scheme + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/")
	if u.RawQuery != "" || u.ForceQuery {
		out += "?" + u.RawQuery
	}
	return out, nil
}

// urlOrigin returns the normalised origin (scheme://host[:port]) of raw.
func urlOrigin(raw string) (string, error) {
	n, err := normalizeURL(raw)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(n)
	return u.Scheme + "://" + u.Host, nil
}
