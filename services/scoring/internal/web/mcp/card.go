package mcp

// card is the server card at /.well-known/mcp/server-card.json: the fields of the MCP server-card
// draft (SEP-2127: $schema, name, version, title, description, remotes with the headers a connection
// takes), plus what a client needs to know before it connects: the tools and prompts, and how to
// authenticate (which calls need a credential, the protected-resource metadata and the
// authorization server).
type card struct {
	Schema         string       `json:"$schema"`
	Name           string       `json:"name"`
	Version        string       `json:"version"`
	Title          string       `json:"title"`
	Description    string       `json:"description"`
	Remotes        []cardRemote `json:"remotes"`
	Tools          []cardItem   `json:"tools"`
	Prompts        []cardItem   `json:"prompts"`
	Authentication cardAuth     `json:"authentication"`
}

type cardRemote struct {
	Type    string       `json:"type"`
	URL     string       `json:"url"`
	Headers []cardHeader `json:"headers"`
}

type cardHeader struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
}

type cardItem struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type cardAuth struct {
	Required                 bool     `json:"required"`
	PublicMethods            []string `json:"public_methods"`
	Schemes                  []string `json:"schemes"`
	ProtectedResourceMetaURL string   `json:"protected_resource_metadata"`
	AuthorizationServers     []string `json:"authorization_servers"`
	TrialKeyURL              string   `json:"trial_key_url"`
}

// cardSchema is the schema URL the server-card draft names.
const cardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"

func serverCard(base, version, metadataURL string) card {
	tool := scoreTool()
	return card{
		Schema: cardSchema, Name: "io.trustlayer/scoring", Version: version, Title: "Claim scoring",
		Description: "Healthcare claim scoring for agents: denial risk, prior-authorization need and expected reimbursement, " +
			"calibrated and explained. Decision support only.",
		Remotes: []cardRemote{{
			Type: "streamable-http", URL: base + EndpointPath,
			Headers: []cardHeader{
				{Name: "Authorization", Description: "Bearer API key or OAuth access token; needed for tools/call of score_workflow", IsSecret: true},
				{Name: "X-Service-Api-Key", Description: "API key, instead of Authorization", IsSecret: true},
			},
		}},
		Tools: []cardItem{{Name: tool.Name, Description: tool.Description}},
		Prompts: []cardItem{
			{Name: PromptTriageDenial, Description: "Triage a claim's denial risk before submission."},
			{Name: PromptPriorAuth, Description: "Prepare a prior-authorization decision for a planned service."},
		},
		Authentication: cardAuth{
			Required:                 true,
			PublicMethods:            []string{"initialize", "ping", "tools/list", "prompts/list", "prompts/get", "completion/complete"},
			Schemes:                  []string{"bearer", "oauth2"},
			ProtectedResourceMetaURL: metadataURL,
			AuthorizationServers:     []string{base},
			TrialKeyURL:              base + "/v1/keys/trial",
		},
	}
}
