package analytics

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

var (
	keyPattern  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	pagePattern = regexp.MustCompile(`^/[A-Za-z0-9._~/%-]{0,199}$`)
	// emailPattern finds an address anywhere in a value ("mail me: a@b.co").
	emailPattern = regexp.MustCompile(`(?i)[a-z0-9._%+-]+@[a-z0-9-]+(\.[a-z0-9-]+)+`)
	// ipv4Pattern finds a dotted IPv4 address.
	ipv4Pattern = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	// ipv6Pattern finds an IPv6 address of at least three groups.
	ipv6Pattern = regexp.MustCompile(`(?i)\b[0-9a-f]{1,4}(:[0-9a-f]{0,4}){2,7}\b`)
	// tokenPattern finds long secrets and identifiers: a run of 32 or more base64/hex characters.
	tokenPattern = regexp.MustCompile(`[A-Za-z0-9+/_=-]{32,}`)
)

// personalKeys are property names that would hold personal data whatever their value.
var personalKeys = []string{"email", "mail", "phone", "tel", "mobile", "name", "first_name", "last_name", "full_name",
	"address", "ip", "ip_address", "user", "user_id", "username", "login", "password", "token", "ssn", "dob", "birthday",
	"card", "credit_card", "iban", "cookie", "session", "session_id", "device_id", "fingerprint"}

// Validate checks an event: a known name, a page path, and bounded flat properties that do not look
// like personal data. The error is a *fault.ValidationError.
func Validate(e Event) error {
	var problems []fault.Problem
	bad := func(field, typ, format string, args ...any) {
		problems = append(problems, fault.Problem{Field: field, Type: typ, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case e.Name == "":
		bad("name", "missing", "Field required")
	case !slices.Contains(Names, e.Name):
		bad("name", "enum", "Input should be one of: %s", strings.Join(Names, ", "))
	}
	switch {
	case e.Page == "":
		bad("page", "missing", "Field required")
	case len(e.Page) > MaxPage:
		bad("page", "string_too_long", "String should have at most %d characters", MaxPage)
	case !pagePattern.MatchString(e.Page):
		bad("page", "value_error", "A path starting with /, without query or fragment")
	case looksPersonal(e.Page) || looksPersonal(unescaped(e.Page)):
		bad("page", "personal_data", "The page path looks like it carries personal data")
	}
	if len(e.Properties) > MaxProperties {
		bad("properties", "too_long", "At most %d properties", MaxProperties)
		return &fault.ValidationError{Problems: problems}
	}
	keys := make([]string, 0, len(e.Properties))
	for k := range e.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := "properties." + k
		if !keyPattern.MatchString(k) {
			bad("properties", "value_error", "Property names are 1 to %d characters of a-z, 0-9 and _, starting with a letter", MaxKey)
			continue
		}
		if slices.Contains(personalKeys, k) {
			bad(field, "personal_data", "Personal data is not accepted")
			continue
		}
		switch v := e.Properties[k].(type) {
		case bool:
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad(field, "value_error", "A finite number")
			} else if v == math.Trunc(v) && (math.Abs(v) >= 1e6) {
				// Seven digits and more could be a phone number, an account or a card fragment.
				bad(field, "personal_data", "Numbers of seven digits or more are not accepted")
			}
		case string:
			switch {
			case utf8.RuneCountInString(v) > MaxString:
				bad(field, "string_too_long", "String should have at most %d characters", MaxString)
			case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
				bad(field, "value_error", "Printable text only")
			case looksPersonal(v):
				bad(field, "personal_data", "The value looks like personal data (an email address, phone number, address or secret)")
			}
		default:
			bad(field, "value_error", "A string, number or boolean (no objects, arrays or null)")
		}
	}
	if len(problems) == 0 && len(e.Properties) > 0 {
		if b, err := json.Marshal(e.Properties); err != nil || len(b) > MaxPropertyBytes {
			bad("properties", "too_long", "At most %d bytes of properties", MaxPropertyBytes)
		}
	}
	if len(problems) > 0 {
		return &fault.ValidationError{Problems: problems}
	}
	return nil
}

// looksPersonal reports whether s carries what could identify a person: an email address, a
// phone-like run of digits, an IP address, or a long token.
func looksPersonal(s string) bool {
	return emailPattern.MatchString(s) || phoneLike(s) || ipv4Pattern.MatchString(s) || ipv6Pattern.MatchString(s) ||
		tokenPattern.MatchString(s)
}

// phoneLike reports whether s holds seven or more digits in a run that only spaces, dots, dashes,
// slashes, parentheses and a leading + separate: phone numbers, card and account numbers.
func phoneLike(s string) bool {
	digits := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
			if digits >= 7 {
				return true
			}
		case r == ' ' || r == '-' || r == '.' || r == '(' || r == ')' || r == '+' || r == '/':
		default:
			digits = 0
		}
	}
	return false
}

// unescaped is the page with its percent-escapes decoded (%40 is @), or the page itself when they
// do not decode.
func unescaped(page string) string {
	if u, err := url.PathUnescape(page); err == nil {
		return u
	}
	return page
}
