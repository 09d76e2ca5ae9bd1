"""`tbmm run`, `tbmm runs`, `tbmm agents`, `tbmm docker`."""
