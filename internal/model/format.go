package model

import "strconv"

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
