package train

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// lambda is the L2 penalty of both fits, on the mean loss and not on the intercept. Payer ids are
// one-hot beside their buckets, so the penalty is what splits an effect between the two: a payer
// with few rows keeps close to its bucket.
const lambda = 1e-3

// fitLogistic fits L2-regularised logistic regression by L-BFGS. Minimize runs L-BFGS as a single task
// and the loss sums rows in order, so the fit is deterministic.
func fitLogistic(d *design) (intercept float64, w []float64, err error) {
	obj := logisticLoss{d: d, grad: make([]float64, len(d.cols)+1)}
	settings := &optimize.Settings{
		GradientThreshold: 1e-7,
		Converger:         &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 50},
		MajorIterations:   5000,
		Concurrent:        1,
	}
	problem := optimize.Problem{
		Func: func(theta []float64) float64 { obj.evaluate(theta); return obj.loss },
		Grad: func(g, theta []float64) { obj.evaluate(theta); copy(g, obj.grad) },
	}
	res, err := optimize.Minimize(problem, make([]float64, len(d.cols)+1), settings, &optimize.LBFGS{})
	if err != nil {
		return 0, nil, fmt.Errorf("logistic regression: %w", err)
	}
	if res.Status != optimize.GradientThreshold && res.Status != optimize.FunctionConvergence {
		return 0, nil, fmt.Errorf("logistic regression did not converge: %v", res.Status)
	}
	return res.X[0], res.X[1:], nil
}

// logisticLoss is the mean log loss plus λ/2·|w|² over θ = (intercept, w), with its gradient. L-BFGS
// asks for the value and the gradient at the same point one after the other, so one pass over the
// rows computes both and the second request is answered from the cache; that halves the fit time.
type logisticLoss struct {
	d     *design
	theta []float64 // point of loss and grad; nil before the first evaluation
	loss  float64
	grad  []float64
}

func (o *logisticLoss) evaluate(theta []float64) {
	if o.theta != nil && slices.Equal(o.theta, theta) {
		return
	}
	d, g := o.d, o.grad
	clear(g)
	sum := 0.0
	for i, y := range d.y {
		z := theta[0]
		for j := d.ptr[i]; j < d.ptr[i+1]; j++ {
			z += theta[1+d.idx[j]] * d.val[j]
		}
		// One exponential serves both the loss, softplus(z) - y·z, and the residual σ(z) - y.
		e := math.Exp(-math.Abs(z))
		p := 1 / (1 + e)
		if z < 0 {
			p = e / (1 + e)
		}
		sum += max(z, 0) + math.Log1p(e) - y*z
		r := p - y
		g[0] += r
		for j := d.ptr[i]; j < d.ptr[i+1]; j++ {
			g[1+d.idx[j]] += r * d.val[j]
		}
	}
	n := float64(len(d.y))
	reg := 0.0
	g[0] /= n
	for c := 1; c < len(g); c++ {
		if d.free != nil && d.free[c-1] {
			g[c] /= n
			continue
		}
		reg += theta[c] * theta[c]
		g[c] = g[c]/n + lambda*theta[c]
	}
	o.loss = sum/n + lambda/2*reg
	o.theta = append(o.theta[:0], theta...)
}

// fitRidge fits least squares with the same L2 penalty, solving the normal equations
// (XᵀX/n + λI)θ = Xᵀy/n by Cholesky. The system is only as wide as the features, so it is built from
// the sparse rows directly.
func fitRidge(d *design) (intercept float64, w []float64, err error) {
	k := len(d.cols) + 1
	n := float64(d.rows())
	a := mat.NewSymDense(k, nil)
	b := mat.NewVecDense(k, nil)
	for i := range d.y {
		lo, hi := d.ptr[i], d.ptr[i+1]
		a.SetSym(0, 0, a.At(0, 0)+1)
		b.SetVec(0, b.AtVec(0)+d.y[i])
		for p := lo; p < hi; p++ {
			cp, vp := int(d.idx[p])+1, d.val[p]
			a.SetSym(0, cp, a.At(0, cp)+vp)
			b.SetVec(cp, b.AtVec(cp)+vp*d.y[i])
			for q := p; q < hi; q++ {
				cq := int(d.idx[q]) + 1
				a.SetSym(cp, cq, a.At(cp, cq)+vp*d.val[q])
			}
		}
	}
	a.ScaleSym(1/n, a)
	b.ScaleVec(1/n, b)
	for c := 1; c < k; c++ {
		a.SetSym(c, c, a.At(c, c)+lambda)
	}
	var chol mat.Cholesky
	if !chol.Factorize(a) {
		return 0, nil, fmt.Errorf("ridge regression: normal equations not positive definite")
	}
	var theta mat.VecDense
	if err := chol.SolveVecTo(&theta, b); err != nil {
		return 0, nil, fmt.Errorf("ridge regression: %w", err)
	}
	w = make([]float64, k-1)
	for c := range w {
		w[c] = theta.AtVec(c + 1)
	}
	return theta.AtVec(0), w, nil
}

func softplus(z float64) float64 { return max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) }

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}
