package controlplane

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// Password length bounds. NIST SP 800-63B-4 (section 3.1.1.2) asks at least 15 characters of a
// password that is the only factor, and at least 64 allowed; length, not composition rules, is what
// it asks for. The upper bound keeps a request from hashing megabytes.
const (
	MinPasswordRunes = 15
	MaxPasswordRunes = 256
)

// MaxWorkspaceNameRunes bounds a workspace name.
const MaxWorkspaceNameRunes = 100

// NormalizeEmail returns the address in the form accounts store it (lower case) or fault.ErrInvalid. The
// parsing is net/mail's (RFC 5322); a display name ("Ann <ann@example.com>"), a group or a local
// address without a domain with a dot is refused, and so is anything longer than the 254 characters
// an SMTP path allows (RFC 5321 section 4.5.3.1.3).
func NormalizeEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", fmt.Errorf("%w: email is required", fault.ErrInvalid)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Name != "" || addr.Address != email || len(email) > 254 {
		return "", fmt.Errorf("%w: email is not a valid e-mail address", fault.ErrInvalid)
	}
	at := strings.LastIndexByte(email, '@')
	domain := email[at+1:]
	if at < 1 || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.HasPrefix(domain, "[") {
		return "", fmt.Errorf("%w: email is not a valid e-mail address", fault.ErrInvalid)
	}
	return strings.ToLower(email), nil
}

// CheckPassword refuses a password a new account may not have: shorter than MinPasswordRunes or
// longer than MaxPasswordRunes characters, not UTF-8, or holding control characters (NIST allows
// every printing character and space; a control character is a paste or encoding accident).
func CheckPassword(password string) error {
	if !utf8.ValidString(password) {
		return fmt.Errorf("%w: password is not valid UTF-8", ErrWeakPassword)
	}
	n := utf8.RuneCountInString(password)
	if n < MinPasswordRunes {
		return fmt.Errorf("%w: password must be at least %d characters (a few words make a good one)", ErrWeakPassword, MinPasswordRunes)
	}
	if n > MaxPasswordRunes {
		return fmt.Errorf("%w: password must be at most %d characters", ErrWeakPassword, MaxPasswordRunes)
	}
	if strings.IndexFunc(password, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: password must not contain control characters", ErrWeakPassword)
	}
	// One character repeated ("aaaaaaaaaaaaaaa") is the degenerate case a length rule lets through.
	first, _ := utf8.DecodeRuneInString(password)
	if strings.Trim(password, string(first)) == "" {
		return fmt.Errorf("%w: password must not be one character repeated", ErrWeakPassword)
	}
	return nil
}

// CheckWorkspaceName trims name and checks it: 1 to MaxWorkspaceNameRunes printable characters.
func CheckWorkspaceName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("%w: workspace_name must not be empty", fault.ErrInvalid)
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return "", fmt.Errorf("%w: workspace_name must hold printable characters only", fault.ErrInvalid)
	}
	if utf8.RuneCountInString(name) > MaxWorkspaceNameRunes {
		return "", fmt.Errorf("%w: workspace_name must be at most %d characters", fault.ErrInvalid, MaxWorkspaceNameRunes)
	}
	return name, nil
}

// MaxKeyNameRunes bounds a key's name.
const MaxKeyNameRunes = 100

// checkKeyName trims a key name: optional, printable, at most MaxKeyNameRunes characters.
func checkKeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return "", fmt.Errorf("%w: name must hold printable characters only", fault.ErrInvalid)
	}
	if utf8.RuneCountInString(name) > MaxKeyNameRunes {
		return "", fmt.Errorf("%w: name must be at most %d characters", fault.ErrInvalid, MaxKeyNameRunes)
	}
	return name, nil
}
