// Package identity carries the authenticated caller of an intelligence or enforcement route: the
// organization whose API key was presented as the bearer token.
package identity

import (
	"context"

	"github.com/google/uuid"
)

// Caller is the organization and key behind a request.
type Caller struct {
	OrganizationID   uuid.UUID
	OrganizationName string
	KeyID            uuid.UUID
	KeyName          string
	KeyPrefix        string
}

type key struct{}

// With returns ctx carrying the caller.
func With(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, key{}, c)
}

// From returns the caller of ctx. Every bearer-protected handler runs behind the authentication
// interceptor, so ok is false only for a route that is not protected.
func From(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(key{}).(Caller)
	return c, ok
}
