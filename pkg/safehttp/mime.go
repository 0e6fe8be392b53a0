package safehttp

import (
	"mime"
	"net/http"
	"strings"
)

// checkMIME applies Policy.AllowedMIME to a response. declared is the Content-Type header, peeked the
// first bytes of the body. It returns the declared media type (parsed, lower case, no parameters; ""
// when absent) and the sniffed one ("" for an empty body).
//
// With AllowedMIME set, the declared type must match an entry, and the sniffed type must agree with it
// (compatible). A missing Content-Type lets the sniffed type stand in for it, as RFC 9110 §8.3 permits
// a recipient to do. With AllowedMIME empty nothing is refused: webhook and audit responses are read
// for their status, not their content.
func (c *Client) checkMIME(declared string, peeked []byte, host string) (mediaType, sniffed string, err *Error) {
	if len(peeked) > 0 {
		sniffed = essence(http.DetectContentType(peeked))
	}
	mediaType = declaredType(declared)
	if declared != "" && mediaType == "" && len(c.policy.AllowedMIME) > 0 {
		return "", sniffed, &Error{Kind: KindMIME, Host: host, Reason: "malformed Content-Type"}
	}
	if len(c.policy.AllowedMIME) == 0 {
		return mediaType, sniffed, nil
	}
	effective := mediaType
	if effective == "" {
		effective = sniffed
	}
	if effective == "" {
		// No header and no body: nothing to judge, and nothing harmful to store.
		return mediaType, sniffed, nil
	}
	if !mimeAllowed(effective, c.policy.AllowedMIME) {
		return mediaType, sniffed, &Error{Kind: KindMIME, Host: host, Reason: "media type " + effective + " not allowed"}
	}
	if !compatible(effective, sniffed) {
		return mediaType, sniffed, &Error{
			Kind:   KindMIME,
			Host:   host,
			Reason: "declared " + effective + " but content sniffs as " + sniffed,
		}
	}
	return mediaType, sniffed, nil
}

// declaredType parses a Content-Type header: the media type in lower case without parameters, or ""
// when the header is absent or malformed.
func declaredType(header string) string {
	if header == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// essence drops parameters from a media type: "text/plain; charset=utf-8" -> "text/plain".
func essence(t string) string {
	t, _, _ = strings.Cut(t, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// mimeAllowed matches t against patterns: exact "type/subtype", "type/*" or "*/*".
func mimeAllowed(t string, patterns []string) bool {
	typ, _, _ := strings.Cut(t, "/")
	for _, p := range patterns {
		if p == t || p == "*/*" || p == typ+"/*" {
			return true
		}
	}
	return false
}

// validMIMEPattern reports whether p is "type/subtype" or "type/*" in RFC 9110 token characters.
func validMIMEPattern(p string) bool {
	typ, sub, ok := strings.Cut(p, "/")
	if !ok || typ == "" || sub == "" || strings.ContainsAny(p, " \t;,\"") {
		return false
	}
	return typ != "*" || sub == "*"
}

// sniffable are the binary types net/http.DetectContentType recognises by signature. A body declared
// as one of them must sniff as it: "application/pdf" that sniffs as anything else is not a PDF.
var sniffable = map[string]bool{
	"application/pdf": true, "application/postscript": true, "application/zip": true,
	"application/x-gzip": true, "application/x-rar-compressed": true, "application/wasm": true,
	"application/ogg": true, "application/vnd.ms-fontobject": true,
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/bmp": true,
	"image/x-icon": true, "audio/basic": true, "audio/aiff": true, "audio/mpeg": true, "audio/midi": true,
	"audio/wave": true, "video/avi": true, "video/mp4": true, "video/webm": true,
	"font/ttf": true, "font/otf": true, "font/collection": true, "font/woff": true, "font/woff2": true,
}

// sniffAliases maps a declared type to the name DetectContentType gives the same format.
var sniffAliases = map[string]string{
	"application/gzip":             "application/x-gzip",
	"application/x-zip-compressed": "application/zip",
	"application/vnd.rar":          "application/x-rar-compressed",
	"image/vnd.microsoft.icon":     "image/x-icon",
	"audio/wav":                    "audio/wave",
	"audio/x-wav":                  "audio/wave",
	"audio/mp3":                    "audio/mpeg",
	"video/x-msvideo":              "video/avi",
}

// compatible decides whether content that sniffs as sniffed may be served as declared. The sniffer
// cannot tell text formats apart and knows only some binary signatures, so the rule is:
//
//   - an empty body (sniffed "") and an identical type always agree; so does a declared
//     application/octet-stream, which claims nothing;
//   - text sniffed (text/plain, text/html, text/xml) agrees with any textual declared type: text/*,
//     JSON, XML, YAML, JavaScript, and +json/+xml types (declared text/markdown, sniffed text/html: fine);
//   - binary sniffed agrees with a declared type that names the same format (aliases such as
//     application/gzip for application/x-gzip), with zip containers (OOXML, ODF, EPUB, JAR) when the
//     sniffer saw a zip, and, when the sniffer saw no signature (application/octet-stream), with a
//     binary declared type it has no signature for (e.g. application/msword);
//   - everything else disagrees: declared text/html sniffed application/pdf, declared application/pdf
//     sniffed text/plain or application/octet-stream, declared text/plain sniffed image/png.
func compatible(declared, sniffed string) bool {
	if sniffed == "" || declared == sniffed || declared == "application/octet-stream" {
		return true
	}
	if strings.HasPrefix(sniffed, "text/") {
		return textual(declared)
	}
	if textual(declared) {
		return false
	}
	if alias, ok := sniffAliases[declared]; ok {
		declared = alias
	}
	switch sniffed {
	case declared:
		return true
	case "application/zip":
		return zipContainer(declared)
	case "application/octet-stream":
		return !sniffable[declared]
	}
	return false
}

// textual reports media types whose content is text.
func textual(t string) bool {
	if strings.HasPrefix(t, "text/") || strings.HasSuffix(t, "+json") || strings.HasSuffix(t, "+xml") {
		return true
	}
	switch t {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/yaml", "application/x-yaml", "application/toml", "application/x-ndjson",
		"application/jsonl", "application/csv", "application/x-www-form-urlencoded":
		return true
	}
	return false
}

// zipContainer reports formats that are zip archives underneath.
func zipContainer(t string) bool {
	return strings.HasSuffix(t, "+zip") ||
		strings.HasPrefix(t, "application/vnd.openxmlformats-officedocument.") ||
		strings.HasPrefix(t, "application/vnd.oasis.opendocument.") ||
		t == "application/java-archive"
}
