"""brooq's tools, apart from the library: the `brooq` command, the demo, deploying the
schema, and the live progress line. The library (brooq.*) never imports them."""
