// A build script, so that cargo applies the [build-dependencies] features too.
fn main() {}
