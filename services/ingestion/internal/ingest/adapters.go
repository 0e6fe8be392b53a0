package ingest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// maxIndexPage bounds how much of an index page is parsed for links.
const maxIndexPage = 5 << 20

// discoverURLs asks the source's adapter which documents to fetch:
//   - literal_url: the one configured URL;
//   - index_page: the links of one allowlisted page whose absolute URL matches link_pattern, in page
//     order, without duplicates, on allowlisted hosts only, at most max_documents.
func (s *Service) discoverURLs(ctx context.Context, src Source) ([]string, error) {
	switch src.Adapter {
	case AdapterIndexPage:
		return s.indexLinks(ctx, src)
	default:
		u, _ := src.AdapterConfig["url"].(string)
		return []string{u}, nil
	}
}

func (s *Service) indexLinks(ctx context.Context, src Source) ([]string, error) {
	indexURL, _ := src.AdapterConfig["index_url"].(string)
	pattern, _ := src.AdapterConfig["link_pattern"].(string)
	maxDocs := DefaultMaxDocuments
	if f, ok := src.AdapterConfig["max_documents"].(float64); ok && f >= 1 {
		maxDocs = int(f)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err // validated at registration; only a hand-edited row gets here
	}
	client := s.client(src, []string{"text/html"})
	defer client.CloseIdleConnections()
	resp, err := client.Do(ctx, &safehttp.Request{Method: http.MethodGet, URL: indexURL})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	base, err := url.Parse(resp.FinalURL)
	if err != nil {
		return nil, err
	}
	allowed := map[string]bool{}
	for _, h := range src.AllowedHosts {
		allowed[h] = true
	}
	return extractLinks(io.LimitReader(resp.Body, maxIndexPage), base, re, allowed, maxDocs), nil
}

// extractLinks walks the page's <a href> elements.
func extractLinks(r io.Reader, base *url.URL, re *regexp.Regexp, allowedHosts map[string]bool, maxDocs int) []string {
	seen := map[string]bool{}
	var out []string
	z := html.NewTokenizer(r)
	for len(out) < maxDocs {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if string(name) != "a" || !hasAttr {
			continue
		}
		for {
			key, val, more := z.TagAttr()
			if string(key) == "href" {
				ref, err := url.Parse(strings.TrimSpace(string(val)))
				if err == nil {
					abs := base.ResolveReference(ref)
					abs.Fragment = ""
					link := abs.String()
					if (abs.Scheme == "https" || abs.Scheme == "http") && allowedHosts[strings.ToLower(abs.Hostname())] &&
						re.MatchString(link) && !seen[link] {
						seen[link] = true
						out = append(out, link)
					}
				}
			}
			if !more {
				break
			}
		}
	}
	return out
}
