package api

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
)

// Organizations implements verification.v1.OrganizationService.
type Organizations struct {
	verificationv1.UnimplementedOrganizationServiceServer
	svc *organizations.Service
}

// NewOrganizations returns the OrganizationService.
func NewOrganizations(svc *organizations.Service) *Organizations { return &Organizations{svc: svc} }

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// CreateOrganization creates an organization (201).
func (s *Organizations) CreateOrganization(ctx context.Context, req *verificationv1.CreateOrganizationRequest) (*verificationv1.CreateOrganizationResponse, error) {
	o, err := s.svc.CreateOrganization(ctx, req.GetName())
	if err != nil {
		return nil, toAPI(err, organizationTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateOrganizationResponse{Organization: &verificationv1.OrganizationResponse{
		Id: o.ID.String(), Name: o.Name, CreatedAt: ts(o.CreatedAt),
	}}, nil
}

// CreateApiKey issues a key (201) and shows its secret once.
func (s *Organizations) CreateApiKey(ctx context.Context, req *verificationv1.CreateApiKeyRequest) (*verificationv1.CreateApiKeyResponse, error) {
	orgID, err := pathID(req.GetOrganizationId(), organizationTarget)
	if err != nil {
		return nil, err
	}
	k, secret, err := s.svc.IssueKey(ctx, orgID, req.GetName())
	if err != nil {
		return nil, toAPI(err, organizationTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateApiKeyResponse{ApiKey: &verificationv1.ApiKeyIssuedResponse{
		Id: k.ID.String(), OrganizationId: k.OrganizationID.String(), Name: k.Name, Prefix: k.Prefix,
		ApiKey: secret, CreatedAt: ts(k.CreatedAt),
	}}, nil
}

// ListApiKeys lists keys without secrets.
func (s *Organizations) ListApiKeys(ctx context.Context, req *verificationv1.ListApiKeysRequest) (*verificationv1.ListApiKeysResponse, error) {
	orgID, err := pathID(req.GetOrganizationId(), organizationTarget)
	if err != nil {
		return nil, err
	}
	keys, err := s.svc.ListKeys(ctx, orgID)
	if err != nil {
		return nil, toAPI(err, organizationTarget)
	}
	out := &verificationv1.ListApiKeysResponse{Items: []*verificationv1.ApiKeyResponse{}}
	for _, k := range keys {
		item := &verificationv1.ApiKeyResponse{
			Id: k.ID.String(), OrganizationId: k.OrganizationID.String(), Name: k.Name, Prefix: k.Prefix,
			CreatedAt: ts(k.CreatedAt), Revoked: k.RevokedAt != nil,
		}
		if k.RevokedAt != nil {
			item.RevokedAt = ts(*k.RevokedAt)
		}
		out.Items = append(out.Items, item)
	}
	return out, nil
}

// RevokeApiKey revokes a key (204).
func (s *Organizations) RevokeApiKey(ctx context.Context, req *verificationv1.RevokeApiKeyRequest) (*verificationv1.RevokeApiKeyResponse, error) {
	orgID, err := pathID(req.GetOrganizationId(), apiKeyTarget)
	if err != nil {
		return nil, err
	}
	keyID, err := pathID(req.GetApiKeyId(), apiKeyTarget)
	if err != nil {
		return nil, err
	}
	if err := s.svc.RevokeKey(ctx, orgID, keyID); err != nil {
		return nil, toAPI(err, apiKeyTarget)
	}
	return &verificationv1.RevokeApiKeyResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// Identity implements verification.v1.IdentityService.
type Identity struct {
	verificationv1.UnimplementedIdentityServiceServer
}

// WhoAmI returns the caller the authentication interceptor found.
func (Identity) WhoAmI(ctx context.Context, _ *verificationv1.WhoAmIRequest) (*verificationv1.WhoAmIResponse, error) {
	c, ok := identity.From(ctx)
	if !ok {
		return nil, errMissingBearer
	}
	return &verificationv1.WhoAmIResponse{Identity: &verificationv1.Identity{
		OrganizationId: c.OrganizationID.String(), OrganizationName: c.OrganizationName,
		ApiKeyId: c.KeyID.String(), ApiKeyName: c.KeyName, ApiKeyPrefix: c.KeyPrefix,
	}}, nil
}
