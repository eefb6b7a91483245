#error "this room is pure (the numerics and the sweep: Eigen only): MPI belongs in the parallel module, see ../shared/STYLE.md"
