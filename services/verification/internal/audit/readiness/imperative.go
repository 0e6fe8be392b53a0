package readiness

import (
	"regexp"
	"strings"
	"unicode"
)

// imperatives are phrasings that address the model rather than describe a tool, the signature of
// tool poisoning. They are matched case-insensitively on the text with invisible characters
// removed and whitespace collapsed, so "ig\u200bnore  previous" cannot slip through:
//
//   - ignore (all) (the) previous/prior/above/earlier instructions, prompts, messages, rules…
//   - disregard / forget / override (all) (the) previous/prior/above/system …
//   - do not / don't / never tell, inform, notify, alert, warn, show, let the user …
//   - do not / don't / never mention, reveal, disclose …
//   - without telling, informing, notifying, alerting, asking the user
//   - before using/calling/invoking any (other) tool
//   - always call/use/invoke/run this tool; call this tool first/before …
//   - you must
//   - system prompt
//   - <instructions> and </instructions>
//   - you are now …
//   - new/updated/real/actual/hidden instructions
//   - read, send, upload, include, attach or pass … ~/.ssh, id_rsa, .env, .aws/credentials,
//     mcp.json or a private key (exfiltration requests)
var imperatives = []struct {
	// cues are lower-case words the text must contain for re to be worth running: the rule runs
	// over every string of every schema, and most of them are keys such as "type".
	cues []string
	re   *regexp.Regexp
}{
	{[]string{"ignore"}, regexp.MustCompile(`(?i)\bignore (?:all |any |every )?(?:of )?(?:the |your |my |these |those )?(?:previous|prior|above|earlier|preceding|former|other|existing) (?:instructions?|directions?|prompts?|messages?|rules|guidelines|context)\b`)},
	{[]string{"disregard", "forget", "override"}, regexp.MustCompile(`(?i)\b(?:disregard|forget|override) (?:all |any |everything |every )?(?:of )?(?:the |your |my )?(?:previous|prior|above|earlier|preceding|former|system)\b`)},
	{[]string{"user"}, regexp.MustCompile(`(?i)\b(?:do not|don't|dont|never) (?:tell|inform|notify|alert|warn|show|let) (?:the |your )?user\b`)},
	{[]string{"mention", "reveal", "disclose"}, regexp.MustCompile(`(?i)\b(?:do not|don't|dont|never) (?:mention|reveal|disclose)\b`)},
	{[]string{"without"}, regexp.MustCompile(`(?i)\bwithout (?:telling|informing|notifying|alerting|asking) (?:the |your )?user\b`)},
	{[]string{"before"}, regexp.MustCompile(`(?i)\bbefore (?:using|calling|invoking|running) (?:any|every|all) (?:other )?tools?\b`)},
	{[]string{"always"}, regexp.MustCompile(`(?i)\balways (?:call|use|invoke|run) this tool\b`)},
	{[]string{"this tool"}, regexp.MustCompile(`(?i)\b(?:call|use|invoke|run) this tool (?:first|before)\b`)},
	{[]string{"you must"}, regexp.MustCompile(`(?i)\byou must\b`)},
	{[]string{"system prompt"}, regexp.MustCompile(`(?i)\bsystem prompt\b`)},
	{[]string{"instructions"}, regexp.MustCompile(`(?i)<\s*/?\s*instructions\s*>`)},
	{[]string{"you are now"}, regexp.MustCompile(`(?i)\byou are now\b`)},
	{[]string{"instructions"}, regexp.MustCompile(`(?i)\b(?:new|updated|real|actual|hidden) instructions\b`)},
	{[]string{"ssh", "id_rsa", ".env", "credentials", "mcp.json", "private key"}, regexp.MustCompile(`(?i)\b(?:read|send|upload|include|attach|pass)\b.{0,60}(?:~/\.ssh|\bid_rsa\b|\.env\b|\.aws/credentials|\bmcp\.json\b|\bprivate key\b)`)},
}

func checkImperativeInstructions(in Input) []Evidence {
	return perText(in, func(s string) []string {
		norm := normalise(s)
		lower := strings.ToLower(norm)
		var found []string
		seen := map[string]bool{}
		for _, imp := range imperatives {
			if !containsAny(lower, imp.cues) {
				continue
			}
			for _, m := range imp.re.FindAllString(norm, 3) {
				k := strings.ToLower(m)
				if !seen[k] {
					seen[k] = true
					found = append(found, quote(m, 80))
				}
			}
		}
		if len(found) == 0 {
			return nil
		}
		return []string{"addresses the model: " + strings.Join(found, ", ")}
	})
}

// normalise drops invisible characters and collapses whitespace, so phrases split by either
// still match; curly apostrophes become straight ones.
func normalise(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.Is(unicode.Cf, r) || isTag(r) || isSelector(r) || unicode.IsControl(r):
			continue
		case r == '’':
			r = '\''
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
