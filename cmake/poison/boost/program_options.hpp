#error "icl_core is numerics only (Eigen): Boost.Program_options belongs in src/cli"
