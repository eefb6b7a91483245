#error "this room is pure (the numerics and the sweep: Eigen only): Boost.Program_options belongs in src/cli"
