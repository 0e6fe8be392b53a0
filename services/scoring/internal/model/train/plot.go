package train

import (
	"bytes"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// Diagram size: 360 × 288 pixels keeps each PNG near 20 KB, inside the artifacts' size budget.
const (
	plotWidth  = 5 * vg.Inch
	plotHeight = 4 * vg.Inch
	plotDPI    = 72
)

var (
	calibratedColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	rawColor        = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	diagonalColor   = color.Gray{Y: 0x99}
)

// probabilityTicks labels every 0.2 of a probability axis; the default marks only 0, 0.5 and 1.
var probabilityTicks = plot.ConstantTicks([]plot.Tick{
	{Value: 0, Label: "0"}, {Value: 0.2, Label: "0.2"}, {Value: 0.4, Label: "0.4"},
	{Value: 0.6, Label: "0.6"}, {Value: 0.8, Label: "0.8"}, {Value: 1, Label: "1"},
})

// reliabilityPNG draws the reliability diagram of calibrated and raw probabilities (non-empty bins
// only) against the diagonal of perfect calibration.
func reliabilityPNG(title string, calibrated, raw []model.ReliabilityBin) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "mean predicted probability"
	p.Y.Label.Text = "observed rate, held-out test"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.X.Tick.Marker, p.Y.Tick.Marker = probabilityTicks, probabilityTicks
	p.Legend.Top, p.Legend.Left = true, true

	diagonal, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	diagonal.Color = diagonalColor
	diagonal.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(diagonal)
	for _, s := range []struct {
		name  string
		bins  []model.ReliabilityBin
		color color.Color
	}{{"calibrated", calibrated, calibratedColor}, {"raw", raw, rawColor}} {
		var xys plotter.XYs
		for _, b := range s.bins {
			if b.Count > 0 {
				xys = append(xys, plotter.XY{X: b.MeanPredicted, Y: b.ObservedRate})
			}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = s.color, s.color
		p.Add(line, points)
		p.Legend.Add(s.name, line, points)
	}

	c := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
