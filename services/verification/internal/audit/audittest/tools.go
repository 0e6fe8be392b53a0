package audittest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The fixtures' surface: the same three tools (and, for Full, one prompt, one resource and one
// template) in the SDK servers and the raw ones, so that a test can compare what both eras list.
// They are written to pass every readiness rule: titled, described in plain declarative sentences
// of more than four words, read-only tools named get_/list_ with readOnlyHint true, the one
// destructive tool with destructiveHint true, every hint explicit, input schemas closed
// (additionalProperties false), typed and bounded (maxLength, minimum/maximum, maxItems), and an
// output schema for each tool.

// tool is a tool as tools/list lists it, with a handler that fabricates a result: the auditor
// never calls a real tool, but the SDK interop test and a curious reader may.
type tool struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	InputSchema  any            `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	Annotations  map[string]any `json:"annotations,omitempty"`

	call func(args map[string]any) map[string]any `json:"-"`
}

// ServerName is the serverInfo name of every fixture; ServerVersion its version.
const (
	ServerName    = "audittest-weather"
	ServerTitle   = "Audittest Weather"
	ServerVersion = "1.4.2"
	// Instructions is the fixtures' initialize (and discover) instructions.
	Instructions = "This server offers weather forecasts and weather station listings for cities, " +
		"and lets a user remove weather alerts that they saved earlier."
)

// hints is a tool's annotations with every hint stated, never left to its default.
func hints(title string, readOnly, destructive, idempotent bool) map[string]any {
	return map[string]any{
		"title":           title,
		"readOnlyHint":    readOnly,
		"destructiveHint": destructive,
		"idempotentHint":  idempotent,
		"openWorldHint":   false,
	}
}

// str is a bounded string property.
func str(desc string, minLen, maxLen int) map[string]any {
	return map[string]any{"type": "string", "description": desc, "minLength": minLen, "maxLength": maxLen}
}

// integer is a bounded integer property.
func integer(desc string, lo, hi int) map[string]any {
	return map[string]any{"type": "integer", "description": desc, "minimum": lo, "maximum": hi}
}

// object is a closed object schema.
func object(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// goodTools are the three well-described tools of the correct fixtures.
func goodTools() []tool {
	return []tool{
		{
			Name:        "get_forecast",
			Title:       "Get forecast",
			Description: "Returns the daily weather forecast for one city over the next one to seven days.",
			InputSchema: object(map[string]any{
				"city": str("Name of the city, for example Lisbon.", 1, 100),
				"days": integer("Number of days to forecast, from one to seven.", 1, 7),
			}, "city"),
			OutputSchema: object(map[string]any{
				"city": str("The city the forecast is for.", 1, 100),
				"days": map[string]any{
					"type":        "array",
					"description": "One entry per forecast day, earliest first.",
					"maxItems":    7,
					"items": object(map[string]any{
						"date":    str("Calendar date in ISO 8601 form.", 10, 10),
						"summary": str("Short description of the expected weather.", 1, 200),
						"highC":   map[string]any{"type": "number", "description": "Highest temperature in degrees Celsius.", "minimum": -100, "maximum": 100},
						"lowC":    map[string]any{"type": "number", "description": "Lowest temperature in degrees Celsius.", "minimum": -100, "maximum": 100},
					}, "date", "summary", "highC", "lowC"),
				},
			}, "city", "days"),
			Annotations: hints("Get forecast", true, false, true),
			call: func(args map[string]any) map[string]any {
				city, _ := args["city"].(string)
				return map[string]any{"city": city, "days": []any{map[string]any{
					"date": "2026-01-01", "summary": "Light rain in the morning, dry afternoon.", "highC": 14.5, "lowC": 8.0,
				}}}
			},
		},
		{
			Name:        "list_stations",
			Title:       "List stations",
			Description: "Lists the weather stations within a given radius of a city, nearest first.",
			InputSchema: object(map[string]any{
				"city":     str("Name of the city, for example Lisbon.", 1, 100),
				"radiusKm": integer("Search radius in kilometres, from one to two hundred.", 1, 200),
				"limit":    integer("Largest number of stations to return, from one to fifty.", 1, 50),
			}, "city"),
			OutputSchema: object(map[string]any{
				"stations": map[string]any{
					"type":        "array",
					"description": "The stations found, nearest first.",
					"maxItems":    50,
					"items": object(map[string]any{
						"id":         str("Identifier of the station.", 1, 64),
						"name":       str("Display name of the station.", 1, 200),
						"distanceKm": map[string]any{"type": "number", "description": "Distance from the city centre in kilometres.", "minimum": 0, "maximum": 200},
					}, "id", "name", "distanceKm"),
				},
			}, "stations"),
			Annotations: hints("List stations", true, false, true),
			call: func(map[string]any) map[string]any {
				return map[string]any{"stations": []any{map[string]any{"id": "LPPT", "name": "Lisbon Airport", "distanceKm": 6.8}}}
			},
		},
		{
			Name:        "delete_alert",
			Title:       "Delete alert",
			Description: "Deletes one saved weather alert, identified by its alert id; the deletion cannot be undone.",
			InputSchema: object(map[string]any{
				"alertId": map[string]any{
					"type": "string", "description": "Identifier of the alert, as the alert listing shows it.",
					"minLength": 1, "maxLength": 64, "pattern": "^[A-Za-z0-9_-]+$",
				},
			}, "alertId"),
			OutputSchema: object(map[string]any{
				"deleted": map[string]any{"type": "boolean", "description": "Whether an alert with this id existed and was deleted."},
			}, "deleted"),
			Annotations: hints("Delete alert", false, true, true),
			call:        func(map[string]any) map[string]any { return map[string]any{"deleted": false} },
		},
	}
}

// manyTools is n good read-only tools, for the too-many-tools readiness rule: each is as well
// written as the good ones, so that only the count is wrong.
func manyTools(n int) []tool {
	topics := []string{"humidity", "pressure", "visibility", "wind", "rainfall", "snowfall", "sunshine", "uv_index", "pollen"}
	out := make([]tool, 0, n)
	for i := range n {
		topic := topics[i%len(topics)]
		name := fmt.Sprintf("get_%s_%02d", topic, i+1)
		words := strings.ReplaceAll(topic, "_", " ")
		out = append(out, tool{
			Name:        name,
			Title:       fmt.Sprintf("Get %s (%d)", words, i+1),
			Description: fmt.Sprintf("Returns the latest %s reading of weather station number %d for one city.", words, i+1),
			InputSchema: object(map[string]any{"city": str("Name of the city, for example Lisbon.", 1, 100)}, "city"),
			OutputSchema: object(map[string]any{
				"value": map[string]any{"type": "number", "description": "The reading, in the unit of the measure.", "minimum": -1000, "maximum": 100000},
			}, "value"),
			Annotations: hints(fmt.Sprintf("Get %s (%d)", words, i+1), true, false, true),
			call:        func(map[string]any) map[string]any { return map[string]any{"value": 1.0} },
		})
	}
	return out
}

// prompt is a prompt as prompts/list lists it.
type prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []promptArgument `json:"arguments,omitempty"`
}

type promptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// goodPrompt is Full's prompt, with arguments.
func goodPrompt() prompt {
	return prompt{
		Name:        "summarize_forecast",
		Title:       "Summarize forecast",
		Description: "A prompt that asks for a short plain-language summary of the forecast for one city.",
		Arguments: []promptArgument{
			{Name: "city", Title: "City", Description: "Name of the city to summarize the forecast for.", Required: true},
			{Name: "days", Title: "Days", Description: "Number of days the summary covers, from one to seven."},
		},
	}
}

// Full's resource and resource template.
const (
	resourceURI      = "weather://stations/index"
	resourceTemplate = "weather://stations/{stationId}"
	resourceText     = `{"stations":[{"id":"LPPT","name":"Lisbon Airport"}]}`
)

// mustJSON marshals v, which is built from maps and slices and cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
