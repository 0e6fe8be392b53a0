module github.com/trustlayer/trustlayer/e2e

go 1.26.0
