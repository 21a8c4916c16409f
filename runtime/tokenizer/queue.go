package tokenizer

// queue is a binary min-heap of merge candidates, ordered by their less
// method (the best merge first), reused across words without allocation.
type queue[T interface{ less(T) bool }] []T

func (q *queue[T]) push(b T) {
	h := append(*q, b)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *queue[T]) pop() T {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}
