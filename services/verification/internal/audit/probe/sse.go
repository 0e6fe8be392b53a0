package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
)

// isEventStream reports whether an answer is a server-sent event stream.
func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// IsJSON reports whether an answer declares application/json.
func IsJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/json"
}

// readEventsUntil reads an event stream until the event whose data is a JSON-RPC response with id,
// returning the raw bytes read; a stream that never answers ends at the byte cap or the timeout.
func readEventsUntil(r io.Reader, id string) ([]byte, error) {
	var raw bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(r, &raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 && answers([]byte(data.String()), id) {
				return raw.Bytes(), nil
			}
			data.Reset()
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return raw.Bytes(), sc.Err()
}

// answers reports whether data is a JSON-RPC response (result or error) to id.
func answers(data []byte, id string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	return string(m.ID) == id && (m.Result != nil || m.Error != nil)
}

// Messages returns the JSON-RPC messages of an answer: the JSON body (one message, or the elements
// of an array), or the data of every event of an event stream. Parts that are not JSON are skipped;
// bad reports whether any were.
func Messages(h http.Header, body []byte) (msgs []json.RawMessage, bad bool) {
	if isEventStream(h) {
		for _, ev := range events(body) {
			if json.Valid(ev) {
				msgs = append(msgs, json.RawMessage(ev))
			} else {
				bad = true
			}
		}
		return msgs, bad
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, false
	}
	if !json.Valid(body) {
		return nil, true
	}
	if body[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(body, &arr) == nil {
			return arr, false
		}
	}
	return []json.RawMessage{body}, false
}

// events splits an event stream into the data of its events.
func events(body []byte) [][]byte {
	var out [][]byte
	var data []byte
	has := false
	for line := range strings.SplitSeq(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n") {
		switch {
		case line == "":
			if has {
				out = append(out, data)
			}
			data, has = nil, false
		case strings.HasPrefix(line, "data:"):
			if has {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			has = true
		}
	}
	if has {
		out = append(out, data)
	}
	return out
}
