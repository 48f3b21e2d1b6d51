package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultbench/faultbench/internal/model"
)

func loadDesigns(paths []string) ([]model.Design, error) {
	var ds []model.Design
	for _, p := range paths {
		fl, err := model.LoadFaultLoad(p)
		if err != nil {
			return nil, modelErr(err)
		}
		ds = append(ds, model.Design{Name: strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), Load: fl})
	}
	return ds, nil
}

func newModelSweepCmd() *cobra.Command {
	var asJSON bool
	var scale, out string
	var steps int
	cmd := &cobra.Command{
		Use:   "sweep FAULTLOAD.yaml [FAULTLOAD.yaml ...] --scale NAME=FROM..TO",
		Short: "Phase 2 over a range of one fault's (or group's) rate, with a figure like Nagaraja et al. (2002) Fig. 6",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, span, ok := strings.Cut(scale, "=")
			if !ok || name == "" {
				return BadInput(fmt.Errorf("--scale must be NAME=FROM..TO, e.g. app=1/day..1/month"))
			}
			rates, err := model.ParseRange(span, steps)
			if err != nil {
				return modelErr(err)
			}
			designs, err := loadDesigns(args)
			if err != nil {
				return err
			}
			res, err := model.Sweep(designs, name, rates)
			if err != nil {
				return modelErr(err)
			}
			if out != "" {
				files, err := model.WriteSweepFigure(res, out)
				if err != nil {
					return Failed(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
			}
			return emit(cmd.OutOrStdout(), asJSON, res)
		},
	}
	cmd.Flags().StringVar(&scale, "scale", "", "NAME=FROM..TO: the fault or group to sweep and its rate range (1/day, 2/week, 1/month or a mean time like 720h)")
	cmd.Flags().IntVar(&steps, "steps", 2, "number of rates, log-spaced, ends included (Nagaraja et al. 2002, Fig. 6 uses 2: 1/day and 1/month)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the figure to FILE.svg and FILE.png")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys are a stable contract)")
	_ = cmd.MarkFlagRequired("scale")
	return cmd
}

func newModelCrossoverCmd() *cobra.Command {
	var asJSON bool
	var scale, out string
	cmd := &cobra.Command{
		Use:   "crossover A.yaml B.yaml --scale NAME[,NAME...]",
		Short: "The factor by which B's named fault rates must grow for B's performability to equal A's",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			names := strings.Split(scale, ",")
			for _, n := range names {
				if n == "" {
					return BadInput(fmt.Errorf("--scale must list fault or group names, e.g. app,link-down"))
				}
			}
			designs, err := loadDesigns(args)
			if err != nil {
				return err
			}
			res, err := model.FindCrossover(designs[0], designs[1], names)
			if err != nil {
				return modelErr(err)
			}
			if out != "" {
				files, err := model.WriteCrossoverFigure(res, out)
				if err != nil {
					return Failed(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", strings.Join(files, ", "))
			}
			return emit(cmd.OutOrStdout(), asJSON, res)
		},
	}
	cmd.Flags().StringVar(&scale, "scale", "", "comma-separated faults or groups of B whose rates are scaled")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the figure to FILE.svg and FILE.png")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (keys are a stable contract)")
	_ = cmd.MarkFlagRequired("scale")
	return cmd
}
