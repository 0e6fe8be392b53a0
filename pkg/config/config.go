// Package config loads a service's configuration from environment variables (through caarlos0/env) and
// validates it, so that a bad value stops start-up with one clear line per problem, naming the variable.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Validator is implemented by configuration structs that check their values beyond parsing.
type Validator interface {
	// Validate returns one *VarError (joined with errors.Join) per bad variable; prefix is the one the
	// struct was loaded behind, so that errors name the real variables.
	Validate(prefix string) error
}

// VarError is one problem with one environment variable.
type VarError struct {
	Var     string
	Problem string
}

func (e *VarError) Error() string { return e.Var + ": " + e.Problem }

// Invalid returns a *VarError.
func Invalid(name, format string, args ...any) *VarError {
	return &VarError{Var: name, Problem: fmt.Sprintf(format, args...)}
}

// Load fills cfg (a pointer to a struct with `env` tags) from getenv, reading each tag's name behind
// prefix (e.g. "SCORING_"), and validates it when cfg is a Validator. Fields keep the value they hold
// when their variable is unset, so callers set per-service defaults before calling. The error lists
// every problem, one "VARIABLE: problem" line each.
func Load(getenv func(string) string, prefix string, cfg any) error {
	params, err := env.GetFieldParamsWithOptions(cfg, env.Options{Prefix: prefix})
	if err != nil {
		return err
	}
	environ := map[string]string{}
	for _, p := range params {
		if v := getenv(p.Key); v != "" {
			environ[p.Key] = v
		}
	}
	var problems []error
	if err := env.ParseWithOptions(cfg, env.Options{Environment: environ, Prefix: prefix}); err != nil {
		problems = append(problems, describe(err, fieldVars(reflect.TypeOf(cfg).Elem(), prefix))...)
	}
	if v, ok := cfg.(Validator); ok {
		// Validation runs after a failed parse too, so that one start-up reports every problem; a
		// variable that failed to parse is not reported twice.
		reported := map[string]bool{}
		for _, p := range problems {
			var ve *VarError
			if errors.As(p, &ve) {
				reported[ve.Var] = true
			}
		}
		for _, p := range flatten(v.Validate(prefix)) {
			var ve *VarError
			if errors.As(p, &ve) && reported[ve.Var] {
				continue
			}
			problems = append(problems, p)
		}
	}
	return errors.Join(problems...)
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// Vars lists the environment variables cfg reads behind prefix, for checks that deployment files name
// only real ones.
func Vars(prefix string, cfg any) ([]string, error) {
	params, err := env.GetFieldParamsWithOptions(cfg, env.Options{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(params))
	for _, p := range params {
		out = append(out, p.Key)
	}
	return out, nil
}

// fieldVars maps Go field names to the variables they read: env's parse errors name only the field.
func fieldVars(t reflect.Type, prefix string) map[string]string {
	out := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
			for k, v := range fieldVars(f.Type, prefix+f.Tag.Get("envPrefix")) {
				out[k] = v
			}
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("env"), ","); name != "" {
			out[f.Name] = prefix + name
		}
	}
	return out
}

// describe rewrites env's errors, which name Go fields, into lines that name variables.
func describe(err error, byField map[string]string) []error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return []error{err}
	}
	var out []error
	for _, e := range agg.Errors {
		var parse env.ParseError
		var unset env.VarIsNotSetError
		var empty env.EmptyVarError
		switch {
		case errors.As(e, &parse):
			name := byField[parse.Name]
			if name == "" {
				name = parse.Name
			}
			out = append(out, Invalid(name, "not a valid %s: %v", friendlyType(parse.Type), unwrapStrconv(parse.Err)))
		case errors.As(e, &unset):
			out = append(out, Invalid(unset.Key, "required, not set"))
		case errors.As(e, &empty):
			out = append(out, Invalid(empty.Key, "must not be empty"))
		default:
			out = append(out, e)
		}
	}
	return out
}

func friendlyType(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "duration (e.g. 30s)"
	}
	return t.String()
}

func unwrapStrconv(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// CheckAddr validates a listen address such as ":8081" or "127.0.0.1:8081".
func CheckAddr(name, value string) error {
	if _, _, err := net.SplitHostPort(value); err != nil {
		return Invalid(name, "not a host:port listen address (got %q)", value)
	}
	return nil
}

// CheckURL validates a URL whose scheme is one of schemes.
func CheckURL(name, value string, schemes ...string) error {
	u, err := url.Parse(value)
	if err != nil || u.Host == "" {
		return Invalid(name, "not a URL (want %s://host...)", strings.Join(schemes, " or "))
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return Invalid(name, "scheme %q not supported (want %s)", u.Scheme, strings.Join(schemes, " or "))
}
