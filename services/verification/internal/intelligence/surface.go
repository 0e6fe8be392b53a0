package intelligence

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// SurfaceObservation is one live tool surface of a remote URL, as an audit listed it: recorded when
// it differs from the URL's previous observation (or is the URL's first).
type SurfaceObservation struct {
	ID         uuid.UUID
	URL        string
	PreviousID uuid.UUID
	Hash       string
	Counts     surface.Counts
	// Listing is what the surface hashes; empty in timeline pages, which do not read it.
	Listing    surface.Listing
	ObservedAt time.Time
}

// The change types of tool surfaces (a remote URL's tools, prompts and resources as an audit listed
// them). Like the listing's, each has one fixed risk (SurfaceRules).
const (
	ToolAdded                   ChangeType = "tool_added"
	ToolAddedDestructive        ChangeType = "tool_added_destructive"
	ToolRemoved                 ChangeType = "tool_removed"
	ToolDescriptionChanged      ChangeType = "tool_description_changed"
	ToolTitleChanged            ChangeType = "tool_title_changed"
	ToolParameterAdded          ChangeType = "tool_parameter_added"
	ToolParameterRemoved        ChangeType = "tool_parameter_removed"
	ToolParameterNowRequired    ChangeType = "tool_parameter_now_required"
	ToolParameterNoLongerNeeded ChangeType = "tool_parameter_no_longer_required"
	ToolSchemaWidened           ChangeType = "tool_schema_widened"
	ToolSchemaNarrowed          ChangeType = "tool_schema_narrowed"
	ToolInputSchemaChanged      ChangeType = "tool_input_schema_changed"
	ToolOutputSchemaChanged     ChangeType = "tool_output_schema_changed"
	ToolAnnotationFlipped       ChangeType = "tool_annotation_flipped"
	ToolAnnotationChanged       ChangeType = "tool_annotation_changed"
	SurfacePromptAdded          ChangeType = "prompt_added"
	SurfacePromptRemoved        ChangeType = "prompt_removed"
	SurfacePromptChanged        ChangeType = "prompt_changed"
	SurfaceResourceAdded        ChangeType = "resource_added"
	SurfaceResourceRemoved      ChangeType = "resource_removed"
	SurfaceResourceChanged      ChangeType = "resource_changed"
)

// SurfaceRules classifies tool-surface changes. The question is the listing rules' one, asked of
// what a model is told and may call: does the change give it a new way to act, or change what an
// approved tool means? Then it is high.
//   - tool_added_destructive (a new tool that does not declare readOnlyHint true and declares no
//     destructiveHint false, so that MCP clients must assume it may destroy) and tool_removed are
//     high; a new read-only or non-destructive tool is medium.
//   - tool_description_changed is high: the description is the instruction the model reads, the
//     channel of tool poisoning, and a reviewed tool with a new description is no longer reviewed.
//   - tool_schema_widened (the input schema accepts what it refused) is high; narrowed is low.
//   - tool_annotation_flipped means a hint flipped toward danger (readOnlyHint to false,
//     destructiveHint or openWorldHint to true): high. Any other annotation edit is low.
//   - Parameters added, removed or made required change the calls a client makes: medium.
//   - Prompts and resources are context the client picks, not actions the model takes: low.
var SurfaceRules = []Rule{
	{ToolAddedDestructive, RiskHigh, "a tool appears that may be destructive (no readOnlyHint true, no destructiveHint false)"},
	{ToolRemoved, RiskHigh, "a tool is no longer listed"},
	{ToolDescriptionChanged, RiskHigh, "a tool's description changed"},
	{ToolSchemaWidened, RiskHigh, "a tool's input schema accepts more than it did"},
	{ToolAnnotationFlipped, RiskHigh, "readOnlyHint became false, or destructiveHint or openWorldHint became true"},
	{ToolAdded, RiskMedium, "a read-only or non-destructive tool appears"},
	{ToolParameterAdded, RiskMedium, "a tool's input schema has a new property"},
	{ToolParameterRemoved, RiskMedium, "a property of a tool's input schema is gone"},
	{ToolParameterNowRequired, RiskMedium, "an optional property became required"},
	{ToolInputSchemaChanged, RiskMedium, "the input schema changed in a way no finer rule names"},
	{ToolParameterNoLongerNeeded, RiskLow, "a required property became optional"},
	{ToolSchemaNarrowed, RiskLow, "a tool's input schema accepts less than it did"},
	{ToolOutputSchemaChanged, RiskLow, "a tool's output schema changed"},
	{ToolTitleChanged, RiskLow, "a tool's title changed"},
	{ToolAnnotationChanged, RiskLow, "an annotation changed without flipping toward danger"},
	{SurfacePromptAdded, RiskLow, "a prompt appears"},
	{SurfacePromptRemoved, RiskLow, "a prompt is no longer listed"},
	{SurfacePromptChanged, RiskLow, "a prompt's title, description or arguments changed"},
	{SurfaceResourceAdded, RiskLow, "a resource or resource template appears"},
	{SurfaceResourceRemoved, RiskLow, "a resource or resource template is no longer listed"},
	{SurfaceResourceChanged, RiskLow, "a resource's name, title, MIME type or description changed"},
}

var surfaceRisk = riskTable(SurfaceRules)

// IsSurfaceChange reports whether t is a tool-surface change type.
func IsSurfaceChange(t ChangeType) bool { _, ok := surfaceRisk[t]; return ok }

// SurfaceDiff classifies what changed from one listing of a remote to the next (surface.Compare and,
// for tools present in both, surface.CompareListings' finer changes). An input schema change that a
// finer rule explains (parameters, widening, narrowing) is reported only by those.
func SurfaceDiff(old, new surface.Listing) []FieldChange {
	changes := surface.CompareListings(old, new)
	// Narrowing is widening seen backwards.
	narrowed := map[string][]surface.Change{}
	for _, c := range surface.CompareListings(new, old) {
		if c.Kind == surface.SchemaWidened {
			narrowed[c.Item] = append(narrowed[c.Item], c)
		}
	}
	finer := map[string]bool{}
	flipped := map[string]bool{}
	for _, c := range changes {
		switch c.Kind {
		case surface.ParameterAdded, surface.ParameterRemoved, surface.ParameterNowRequired,
			surface.ParameterNoLongerRequired, surface.SchemaWidened:
			finer[c.Item] = true
		case surface.AnnotationFlipped:
			flipped[c.Item+"\x00"+c.Field] = true
		}
	}
	for item := range narrowed {
		finer[item] = true
	}
	newTools := map[string]surface.Tool{}
	for _, t := range new.Tools {
		newTools[t.Name] = t
	}

	var out []FieldChange
	add := func(t ChangeType, kind, item, field, old, new, summary string) {
		path := kind + "." + item
		if field != "" {
			path += "." + field
		}
		out = append(out, FieldChange{Field: path, Old: old, New: new, Type: t, Risk: surfaceRisk[t], Summary: summary})
	}
	emittedNarrow := map[string]bool{}
	for _, c := range changes {
		switch c.Kind {
		case surface.ToolAdded:
			if destructive(newTools[c.Item]) {
				add(ToolAddedDestructive, "tools", c.Item, "", "", c.Item, fmt.Sprintf("tool %s added; it may be destructive", c.Item))
			} else {
				add(ToolAdded, "tools", c.Item, "", "", c.Item, fmt.Sprintf("tool %s added (read-only or non-destructive)", c.Item))
			}
		case surface.ToolRemoved:
			add(ToolRemoved, "tools", c.Item, "", c.Item, "", fmt.Sprintf("tool %s removed", c.Item))
		case surface.DescriptionChanged:
			add(ToolDescriptionChanged, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s: %s", c.Item, c.Detail))
		case surface.TitleChanged:
			add(ToolTitleChanged, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s: title %s", c.Item, c.Detail))
		case surface.InputSchemaChanged:
			if !finer[c.Item] {
				add(ToolInputSchemaChanged, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s: %s", c.Item, c.Detail))
			}
			if !emittedNarrow[c.Item] {
				emittedNarrow[c.Item] = true
				for _, n := range narrowed[c.Item] {
					add(ToolSchemaNarrowed, "tools", c.Item, n.Field, "", "", fmt.Sprintf("tool %s accepts less: %s", c.Item, n.Detail))
				}
			}
		case surface.OutputSchemaChanged:
			add(ToolOutputSchemaChanged, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s: %s", c.Item, c.Detail))
		case surface.AnnotationChanged:
			if !flipped[c.Item+"\x00"+c.Field] {
				add(ToolAnnotationChanged, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s: %s %s", c.Item, c.Field, c.Detail))
			}
		case surface.AnnotationFlipped:
			name, _ := strings.CutPrefix(c.Field, "annotations.")
			before, after := flipValues(c.Detail)
			t := ToolAnnotationChanged
			if (name == "readOnlyHint" && after == "false") || (name != "readOnlyHint" && name != "idempotentHint" && after == "true") {
				t = ToolAnnotationFlipped
			}
			add(t, "tools", c.Item, c.Field, before, after, fmt.Sprintf("tool %s: %s", c.Item, c.Detail))
		case surface.ParameterAdded:
			add(ToolParameterAdded, "tools", c.Item, c.Field, "", c.Detail, fmt.Sprintf("tool %s: new %s parameter %s", c.Item, c.Detail, lastSegment(c.Field)))
		case surface.ParameterRemoved:
			add(ToolParameterRemoved, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s: parameter %s removed", c.Item, lastSegment(c.Field)))
		case surface.ParameterNowRequired:
			add(ToolParameterNowRequired, "tools", c.Item, c.Field, "optional", "required", fmt.Sprintf("tool %s: parameter %s now required", c.Item, lastSegment(c.Field)))
		case surface.ParameterNoLongerRequired:
			add(ToolParameterNoLongerNeeded, "tools", c.Item, c.Field, "required", "optional", fmt.Sprintf("tool %s: parameter %s no longer required", c.Item, lastSegment(c.Field)))
		case surface.SchemaWidened:
			add(ToolSchemaWidened, "tools", c.Item, c.Field, "", "", fmt.Sprintf("tool %s accepts more: %s", c.Item, c.Detail))
		case surface.PromptAdded:
			add(SurfacePromptAdded, "prompts", c.Item, "", "", c.Item, fmt.Sprintf("prompt %s added", c.Item))
		case surface.PromptRemoved:
			add(SurfacePromptRemoved, "prompts", c.Item, "", c.Item, "", fmt.Sprintf("prompt %s removed", c.Item))
		case surface.PromptChanged:
			add(SurfacePromptChanged, "prompts", c.Item, c.Field, "", "", fmt.Sprintf("prompt %s: %s", c.Item, c.Detail))
		case surface.ResourceAdded:
			add(SurfaceResourceAdded, "resources", c.Item, "", "", c.Item, strings.TrimSpace(fmt.Sprintf("resource %s added %s", c.Item, c.Detail)))
		case surface.ResourceRemoved:
			add(SurfaceResourceRemoved, "resources", c.Item, "", c.Item, "", strings.TrimSpace(fmt.Sprintf("resource %s removed %s", c.Item, c.Detail)))
		case surface.ResourceChanged:
			add(SurfaceResourceChanged, "resources", c.Item, c.Field, "", "", fmt.Sprintf("resource %s: %s", c.Item, c.Detail))
		}
	}
	return out
}

// destructive applies MCP's defaults: a tool is assumed destructive unless it says readOnlyHint
// true or destructiveHint false.
func destructive(t surface.Tool) bool {
	m := surfaceObject(t.Annotations)
	if ro, _ := m["readOnlyHint"].(bool); ro {
		return false
	}
	if d, ok := m["destructiveHint"].(bool); ok && !d {
		return false
	}
	return true
}

// flipValues reads surface's flip detail, "<hint> <old>[ (default)] -> <new>[ (default)]".
func flipValues(detail string) (before, after string) {
	l, r, _ := strings.Cut(detail, " -> ")
	if f := strings.Fields(l); len(f) >= 2 {
		before = f[1]
	}
	if f := strings.Fields(r); len(f) > 0 {
		after = f[0]
	}
	return before, after
}

// surfaceObject decodes a JSON object (annotations); nil when raw is not one.
func surfaceObject(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func lastSegment(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[i+1:]
	}
	return field
}
