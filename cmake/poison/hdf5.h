#error "icl_core is numerics only (Eigen): hdf5.h belongs in src/io or src/cli, see ../shared/STYLE.md"
