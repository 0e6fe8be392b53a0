package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts the server offers: the two tasks agents in revenue-cycle work bring to the tool. Each
// prompt tells the agent which workflow to call, what to put in the payload, and how to read the
// answer, so that the agent neither guesses field names nor overstates a probability.
const (
	PromptTriageDenial    = "triage_denial_risk"
	PromptPriorAuth       = "prepare_prior_auth"
	argClaim              = "claim"
	argOperatingPoint     = "operating_point"
	argPayerName          = "payer_name"
	defaultOperatingPoint = "balanced"
)

var operatingPoints = []string{"high_recall", "balanced", "high_precision"}

func addPrompts(s *sdk.Server) {
	s.AddPrompt(&sdk.Prompt{
		Name:        PromptTriageDenial,
		Title:       "Triage a claim's denial risk before submission",
		Description: "Scores a claim with healthcare.denial and turns the result into a submit / fix-first decision with the factors to check.",
		Arguments: []*sdk.PromptArgument{
			{Name: argClaim, Title: "Claim", Required: true, Description: "The claim as JSON, or its fields in words: external_claim_id, service_date, provider_id, payer_id, cpt_code, icd10_code, billed_amount, place_of_service, network_status."},
			{Name: argOperatingPoint, Title: "Operating point", Description: "high_recall (flag more claims), balanced (default) or high_precision (flag fewer)."},
		},
	}, triageDenial)
	s.AddPrompt(&sdk.Prompt{
		Name:        PromptPriorAuth,
		Title:       "Prepare a prior-authorization decision",
		Description: "Scores a planned service with healthcare.prior_auth and drafts what to gather if authorization is likely required.",
		Arguments: []*sdk.PromptArgument{
			{Name: argClaim, Title: "Planned service", Required: true, Description: "The planned service as JSON, or its fields in words: external_claim_id (an order or encounter id), service_date, provider_id, payer_id, cpt_code, icd10_code, billed_amount."},
			{Name: argPayerName, Title: "Payer name", Description: "The payer's name, used in the drafted checklist."},
		},
	}, preparePriorAuth)
}

func triageDenial(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	args := req.Params.Arguments
	claim := strings.TrimSpace(args[argClaim])
	if claim == "" {
		return nil, fmt.Errorf("argument %q is required", argClaim)
	}
	point := args[argOperatingPoint]
	if point == "" {
		point = defaultOperatingPoint
	}
	if !slices.Contains(operatingPoints, point) {
		return nil, fmt.Errorf("argument %q must be one of %s", argOperatingPoint, strings.Join(operatingPoints, ", "))
	}
	text := fmt.Sprintf(`Assess the denial risk of this claim before it is submitted.

Claim:
%s

1. Call the tool %s with workflow "healthcare.denial", the claim's fields as payload (dates YYYY-MM-DD, place_of_service a 2-digit code, billed_amount in dollars), and options {"operating_point": %q}. Leave out patient names, dates of birth and member ids: the payload needs none.
2. If the tool answers with validation errors, fix only what the errors name, say what you changed, and call again once.
3. Report: the denial probability (details.denial.denial_probability), whether it is at or above the threshold (details.denial.predicted_denial, details.denial.threshold), the risk tier, the confidence, and the top factors that increase risk.
4. Recommend "submit" or "review first", and for "review first" list what to check for each risk-increasing factor (coding, medical necessity documentation, network status, payer policy).
5. Quote the request id from the result's _meta so that the outcome can be reported later as feedback.
This is decision support: state the probability, never a certainty, and leave the decision to a person.`, claim, ToolName, point)
	return &sdk.GetPromptResult{
		Description: "Denial-risk triage of one claim",
		Messages:    []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}},
	}, nil
}

func preparePriorAuth(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	args := req.Params.Arguments
	claim := strings.TrimSpace(args[argClaim])
	if claim == "" {
		return nil, fmt.Errorf("argument %q is required", argClaim)
	}
	payer := strings.TrimSpace(args[argPayerName])
	if payer == "" {
		payer = "the payer"
	}
	text := fmt.Sprintf(`Decide whether this planned service needs prior authorization from %s, and prepare the request if it does.

Planned service:
%s

1. Call the tool %s with workflow "healthcare.prior_auth" and the service's fields as payload (the same field names as a claim). Leave out patient names, dates of birth and member ids.
2. If the tool answers with validation errors, fix only what the errors name and call again once.
3. Report the probability that authorization is required (details.prior_auth.prior_auth_probability), the risk level, the confidence, and the payer support level (details.prior_auth.payer_support). With low support, say that the payer's current policy must be checked by hand.
4. List the published policy changes that matched (details.prior_auth.policy_signals) with their dates and links.
5. If the probability is 0.5 or more, or a matching policy adds authorization for the code, draft a checklist for the request to the payer: the procedure and diagnosis codes, the clinical documentation that supports medical necessity, the service date and the ordering provider.
6. Quote the request id from the result's _meta for later feedback.
This is decision support: the payer's own policy decides.`, payer, claim, ToolName)
	return &sdk.GetPromptResult{
		Description: "Prior-authorization preparation for one planned service",
		Messages:    []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}},
	}, nil
}

// complete offers the values of the prompts' enumerated arguments that start with what was typed.
// Other arguments and references have no suggestions: an empty list, as the specification allows.
func complete(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	values := []string{}
	p := req.Params
	if p.Ref != nil && p.Ref.Type == "ref/prompt" && p.Ref.Name == PromptTriageDenial && p.Argument.Name == argOperatingPoint {
		for _, v := range operatingPoints {
			if strings.HasPrefix(v, p.Argument.Value) {
				values = append(values, v)
			}
		}
	}
	return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
