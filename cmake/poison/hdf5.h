#error "this room is pure (the numerics and the sweep: Eigen only): hdf5.h belongs in src/io or src/cli, see ../shared/STYLE.md"
