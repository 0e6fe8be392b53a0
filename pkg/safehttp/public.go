package safehttp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PublicError returns a stable code and a message safe to show to whoever supplied the URL (a webhook
// customer, an API caller): the code is Kind.Code, except that DNS failures and blocked addresses answer
// the target codes TargetDNSFailed and TargetIPBlocked. The message never names an address, a resolver
// or a Go error: those stay in the caller's logs (err.Error() names the host and the resolver's text).
// err == nil gives "", "".
func PublicError(err error) (code, message string) {
	if err == nil {
		return "", ""
	}
	var e *Error
	if !errors.As(err, &e) {
		return KindUnknown.Code(), publicMessage(KindUnknown, 0)
	}
	return publicCode(e.Kind), publicMessage(e.Kind, e.Status)
}

// PublicErrorText is PublicError as one line, "code: message".
func PublicErrorText(err error) string {
	code, msg := PublicError(err)
	if code == "" {
		return ""
	}
	return code + ": " + msg
}

// SanitizeErrorText maps a stored error text to the "code: message" form of PublicErrorText: a text
// already in that form is returned as is, the text of an *Error (as stored before PublicErrorText
// existed) is reduced to its kind, and anything else becomes the unknown code.
func SanitizeErrorText(text string) string {
	if text == "" {
		return ""
	}
	for k := range kindCodes {
		kind := Kind(k)
		if text == publicCode(kind)+": "+publicMessage(kind, 0) {
			return text
		}
		if rest, ok := strings.CutPrefix(text, publicCode(kind)+": the endpoint answered HTTP "); ok && kind == KindStatus {
			if n, err := strconv.Atoi(rest); err == nil && n >= 100 && n <= 999 {
				return text
			}
		}
	}
	if rest, ok := strings.CutPrefix(text, "safehttp: "); ok {
		for k, name := range kindNames {
			kind := Kind(k)
			if kind == KindStatus {
				var status int
				if _, err := fmt.Sscanf(rest, name+" %d", &status); err == nil {
					return publicCode(kind) + ": " + publicMessage(kind, status)
				}
				continue
			}
			if rest == name || strings.HasPrefix(rest, name+":") || strings.HasPrefix(rest, name+" (") {
				return publicCode(kind) + ": " + publicMessage(kind, 0)
			}
		}
	}
	return KindUnknown.Code() + ": " + publicMessage(KindUnknown, 0)
}

func publicCode(k Kind) string {
	switch k {
	case KindDNS:
		return TargetDNSFailed
	case KindBlockedAddress:
		return TargetIPBlocked
	}
	return k.Code()
}

func publicMessage(k Kind, status int) string {
	switch k {
	case KindBadURL:
		return "the URL is not valid"
	case KindHostNotAllowed:
		return "the host is not allowed"
	case KindBlockedAddress:
		return "the host is, or resolves to, an address that is not allowed"
	case KindTooLarge:
		return "the response was too large"
	case KindMIME:
		return "the response media type was not accepted"
	case KindStatus:
		if status != 0 {
			return fmt.Sprintf("the endpoint answered HTTP %d", status)
		}
		return "the endpoint answered an unexpected status"
	case KindTimeout:
		return "the request timed out"
	case KindNetwork:
		return "the connection failed or was closed early"
	case KindDNS:
		return "the host name did not resolve"
	case KindTLS:
		return "the TLS handshake or certificate check failed"
	case KindTooManyRedirects:
		return "too many redirects"
	case KindCanceled:
		return "the request was canceled"
	}
	return "the request failed"
}
