#error "icl_core is numerics only (Eigen): MPI belongs in the parallel module, see ../shared/STYLE.md"
