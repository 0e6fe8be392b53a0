package train

import "strconv"

// round keeps 6 significant digits of every number written to an artifact, and the models are
// evaluated with the rounded values, so the metrics describe exactly what the runtime loads. It also
// absorbs last-bit differences between platforms (fused multiply-add on arm64, assembly kernels on
// amd64) that would otherwise reach the files.
func round(x float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	if err != nil {
		panic(err) // FormatFloat output always parses
	}
	return v
}
