package oauth

import (
	"net"
	"net/url"

	"github.com/trustlayer/trustlayer/pkg/config"
)

// ValidateOIDC checks the identity-provider settings (prefix is the service's variable prefix): all
// three set, or none; the issuer an https URL (http only on a loopback host, for local providers),
// since the ID tokens' keys and the code exchange travel over it.
func ValidateOIDC(prefix string, o OIDC) []error {
	if o.Issuer == "" && o.ClientID == "" && o.ClientSecret == "" {
		return nil
	}
	var errs []error
	for _, f := range []struct{ name, value string }{{"OIDC_ISSUER", o.Issuer}, {"OIDC_CLIENT_ID", o.ClientID}, {"OIDC_CLIENT_SECRET", o.ClientSecret}} {
		if name, v := f.name, f.value; v == "" {
			errs = append(errs, config.Invalid(prefix+name, "required when any of %sOIDC_ISSUER, %sOIDC_CLIENT_ID, %sOIDC_CLIENT_SECRET is set", prefix, prefix, prefix))
		}
	}
	if o.Issuer != "" {
		u, err := url.Parse(o.Issuer)
		switch {
		case err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
			errs = append(errs, config.Invalid(prefix+"OIDC_ISSUER", "not an issuer URL (want https://host[/path])"))
		case u.Scheme == "https":
		case u.Scheme == "http" && isLoopback(u.Hostname()):
		default:
			errs = append(errs, config.Invalid(prefix+"OIDC_ISSUER", "must be https (http only on a loopback host), got %q", u.Scheme+"://"+u.Host))
		}
	}
	return errs
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
