// Stands in for the tarball's lib/tools/ansi-console (Elastic's AnsiConsoleLoader), which is not
// published on Maven Central and which the node loads by this name at start, failing without it.
// Elastic's loader returns a console only when stdout is an ANSI terminal; this node's stdout is a
// log file, where the real one returns null too: logs go to DIR/logs/website-stack.log only.
package org.elasticsearch.io.ansi;

import java.util.function.Supplier;

public final class AnsiConsoleLoader implements Supplier<Object> {
    @Override
    public Object get() {
        return null;
    }
}
