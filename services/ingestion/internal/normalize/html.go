package normalize

import (
	"context"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML rules, in the order the walker applies them:
//
//   - Dropped with their content: head, script, style, noscript, template, nav, svg, canvas, iframe,
//     object, embed, button, select, textarea, dialog; elements with the hidden attribute,
//     aria-hidden="true", an inline style with display:none or visibility:hidden, a role of
//     navigation, banner, contentinfo, search, menu, menubar or toolbar, or a class or id naming site
//     chrome (chromeNames); header, footer and aside unless inside main or article (site banner and
//     footer versus an article's own header).
//   - Headings h1-h6 are blocks that start sections; a block element nested in a heading does not
//     split it.
//   - Block elements (p, div, li, dt, dd, tr, blockquote, section, ...) and br end the current block.
//   - Table cells join their row with one space, so a row is one line. A cell that holds a layout
//     (a nested table, list or heading, or several paragraphs or divisions) is treated as a block
//     container instead, since old CMS pages lay whole documents out in one cell.
//   - pre keeps its line breaks: each of its lines is a block.
//   - Everything else is inline: its text joins the current block.
var dropTags = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Svg: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true,
	atom.Embed: true, atom.Button: true, atom.Select: true, atom.Textarea: true, atom.Dialog: true,
}

var blockTags = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Body: true,
	atom.Caption: true, atom.Center: true, atom.Dd: true, atom.Details: true, atom.Div: true,
	atom.Dl: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true,
	atom.Footer: true, atom.Form: true, atom.Header: true, atom.Hgroup: true, atom.Hr: true,
	atom.Html: true, atom.Legend: true, atom.Li: true, atom.Main: true, atom.Menu: true, atom.Ol: true,
	atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true,
	atom.Tbody: true, atom.Thead: true, atom.Tfoot: true, atom.Tr: true, atom.Ul: true,
}

var headingLevel = map[atom.Atom]int{
	atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6,
}

// chromeNames are class or id tokens (case-insensitive) that mark site chrome on common CMS themes.
var chromeNames = map[string]bool{
	"breadcrumb": true, "breadcrumbs": true, "skip-link": true, "skip-to-content": true,
	"cookie-banner": true, "cookie-consent": true, "navbar": true, "site-nav": true,
	"site-header": true, "site-footer": true, "print-hide": true, "visually-hidden": true,
	"sr-only": true,
}

var chromeRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "search": true, "menu": true,
	"menubar": true, "toolbar": true,
}

func normalizeHTML(ctx context.Context, s string) (*builder, error) {
	root, err := html.Parse(strings.NewReader(s))
	if err != nil {
		// The only failure reading from a string is nesting deeper than the parser's 512 open
		// elements (unclosed <div> or <font> runs on old CMS pages). Such a page still has text.
		return normalizeHTMLTokens(ctx, s)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &htmlWalker{b: &builder{}}
	w.walk(root)
	w.flush()
	return w.b, nil
}

type htmlWalker struct {
	b        *builder
	cur      strings.Builder
	inMain   int // depth of main/article ancestors
	heading  int // level of the heading being collected, 0 outside headings
	dataCell int // depth of data table cells: blocks inside them join the row
	pre      int
}

func (w *htmlWalker) flush() {
	if w.heading > 0 || w.dataCell > 0 {
		w.cur.WriteByte(' ')
		return
	}
	w.b.add(w.cur.String(), false, 0)
	w.cur.Reset()
}

// walk visits n and its subtree. It is iterative over siblings and recursive over depth, which the
// HTML5 parser caps at 512 open elements.
func (w *htmlWalker) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.CommentNode, html.DoctypeNode, html.RawNode:
		return
	case html.DocumentNode:
		w.children(n)
		return
	case html.ElementNode:
	default:
		return
	}
	if w.dropped(n) {
		return
	}
	a := n.DataAtom
	if lvl, ok := headingLevel[a]; ok && w.heading == 0 && w.dataCell == 0 {
		w.flush()
		w.heading = lvl
		w.children(n)
		w.heading = 0
		w.b.add(w.cur.String(), true, lvl)
		w.cur.Reset()
		return
	}
	switch {
	case a == atom.Br:
		w.flush()
		return
	case a == atom.Td || a == atom.Th:
		if isLayoutCell(n) {
			w.flush()
			w.children(n)
			w.flush()
			return
		}
		w.cur.WriteByte(' ')
		w.dataCell++
		w.children(n)
		w.dataCell--
		w.cur.WriteByte(' ')
		return
	case a == atom.Pre:
		w.flush()
		w.pre++
		w.children(n)
		w.pre--
		w.flush()
		return
	case blockTags[a]:
		main := a == atom.Main || a == atom.Article
		if main {
			w.inMain++
		}
		w.flush()
		w.children(n)
		w.flush()
		if main {
			w.inMain--
		}
		return
	}
	w.children(n)
}

func (w *htmlWalker) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

func (w *htmlWalker) text(s string) {
	if w.pre == 0 {
		w.cur.WriteString(s)
		return
	}
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			w.flush()
		}
		w.cur.WriteString(line)
	}
}

func (w *htmlWalker) dropped(n *html.Node) bool {
	if dropTags[n.DataAtom] {
		return true
	}
	switch n.DataAtom {
	case atom.Header, atom.Footer, atom.Aside:
		if w.inMain == 0 {
			return true
		}
	}
	for _, at := range n.Attr {
		switch strings.ToLower(at.Key) {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(at.Val), "true") {
				return true
			}
		case "role":
			if chromeRoles[strings.ToLower(strings.TrimSpace(at.Val))] {
				return true
			}
		case "style":
			v := strings.ToLower(strings.Join(strings.Fields(at.Val), ""))
			if strings.Contains(v, "display:none") || strings.Contains(v, "visibility:hidden") {
				return true
			}
		case "class", "id":
			for _, tok := range strings.Fields(at.Val) {
				if chromeNames[strings.ToLower(tok)] {
					return true
				}
			}
		}
	}
	return false
}

// isLayoutCell reports whether a table cell holds a layout rather than a datum: a nested table,
// list or heading, or more than one paragraph-like child.
func isLayoutCell(cell *html.Node) bool {
	blocks := 0
	var visit func(n *html.Node) bool
	visit = func(n *html.Node) bool {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			switch c.DataAtom {
			case atom.Table, atom.Ul, atom.Ol, atom.Dl, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				return true
			case atom.P, atom.Div, atom.Blockquote, atom.Pre, atom.Section:
				blocks++
				if blocks > 1 {
					return true
				}
			}
			if visit(c) {
				return true
			}
		}
		return false
	}
	return visit(cell)
}

// normalizeHTMLTokens is the fallback for documents the tree builder rejects. It applies the same
// rules on the token stream without a tree: drop-listed elements, headings, blocks, br and table
// rows, but no ancestor-dependent rules (header and footer are kept, cells never hold layouts).
func normalizeHTMLTokens(ctx context.Context, s string) (*builder, error) {
	b := &builder{}
	var cur strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0 // depth inside dropped elements
	heading := 0
	flush := func() {
		if heading > 0 {
			cur.WriteByte(' ')
			return
		}
		b.add(cur.String(), false, 0)
		cur.Reset()
	}
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		a := tok.DataAtom
		switch tt {
		case html.TextToken:
			if skip == 0 {
				cur.WriteString(tok.Data)
			}
		case html.StartTagToken:
			if dropTags[a] {
				skip++
				continue
			}
			if skip > 0 {
				continue
			}
			if lvl, ok := headingLevel[a]; ok && heading == 0 {
				flush()
				heading = lvl
			} else if blockTags[a] || a == atom.Br {
				flush()
			} else if a == atom.Td || a == atom.Th {
				cur.WriteByte(' ')
			}
		case html.SelfClosingTagToken:
			if skip == 0 && (blockTags[a] || a == atom.Br) {
				flush()
			}
		case html.EndTagToken:
			if dropTags[a] {
				if skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			if _, ok := headingLevel[a]; ok && heading > 0 {
				b.add(cur.String(), true, heading)
				cur.Reset()
				heading = 0
			} else if blockTags[a] {
				flush()
			}
		}
	}
	heading = 0
	flush()
	return b, nil
}
