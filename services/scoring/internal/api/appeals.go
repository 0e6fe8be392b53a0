package api

import (
	"context"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/appeals"
)

// Appeals implements scoring.v1.AppealService.
type Appeals struct {
	scoringv1.UnimplementedAppealServiceServer
}

// GenerateAppeal is POST /v1/claims/appeals/generate.
func (Appeals) GenerateAppeal(ctx context.Context, req *scoringv1.GenerateAppealRequest) (*scoringv1.GenerateAppealResponse, error) {
	a, err := appeals.Generate(appeals.Input{
		Claim: req.GetClaim().AsMap(), DenialReasonCodes: req.GetDenialReasonCodes(), RemarkCodes: req.GetRemarkCodes(),
		DenialDate: req.GetDenialDate(), PayerClass: req.GetPayerClass(), PayerName: req.GetPayerName(),
		PriorAuthNumber: req.GetPriorAuthNumber(), Notes: req.GetNotes(),
	})
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := &scoringv1.Appeal{
		GeneratorVersion: a.GeneratorVersion, AppealId: a.AppealID, ExternalClaimId: a.ExternalClaimID, Priority: a.Priority,
		Letter:   &scoringv1.AppealLetter{Subject: a.Letter.Subject},
		Warnings: nonNil(a.Warnings), Placeholders: nonNil(a.Placeholders),
		ReasonCodes: []*scoringv1.AppealReasonCode{}, RemarkCodes: []*scoringv1.AppealRemarkCode{},
	}
	if d := a.AppealDeadline; d != nil {
		out.AppealDeadline = &scoringv1.AppealDeadline{Date: d.Date, WindowDays: int32(d.WindowDays), PayerClass: string(d.PayerClass), Basis: d.Basis}
	}
	for _, r := range a.ReasonCodes {
		out.ReasonCodes = append(out.ReasonCodes, &scoringv1.AppealReasonCode{Code: r.Code, Group: r.Group, Description: r.Description, Category: string(r.Category)})
	}
	for _, r := range a.RemarkCodes {
		out.RemarkCodes = append(out.RemarkCodes, &scoringv1.AppealRemarkCode{Code: r.Code, Description: r.Description})
	}
	for _, g := range a.Arguments {
		out.Arguments = append(out.Arguments, &scoringv1.AppealArgument{Category: string(g.Category), Title: g.Title, Text: g.Text, References: nonNil(g.References)})
	}
	for _, e := range a.Evidence {
		out.Evidence = append(out.Evidence, &scoringv1.AppealEvidence{Item: e.Item, Required: e.Required, Reason: e.Reason})
	}
	for _, s := range a.Letter.Sections {
		out.Letter.Sections = append(out.Letter.Sections, &scoringv1.AppealLetterSection{Heading: s.Heading, Body: s.Body})
	}
	return &scoringv1.GenerateAppealResponse{Appeal: out}, nil
}

// nonNil renders a nil list as [], as the documented bodies list nothing.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
