// Two jobs of the tarball's launcher (bin/elasticsearch, org.elasticsearch.server.cli.ServerCli),
// which is not published on Maven Central, done with Elasticsearch's own classes for
// scripts/elasticsearch.sh:
//
//   server-args HOME CONFIG   writes to stdout the ServerArgs that the node reads from its standard
//                             input at start: the settings of CONFIG/elasticsearch.yml (resolved by
//                             Elasticsearch's InternalSettingsPreparer, as the launcher does) and the
//                             secure settings of CONFIG/elasticsearch.keystore (created, with its
//                             random seed, the first time, as the launcher does)
//   hash                      reads "user:password" lines on stdin and prints "user:hash" lines for
//                             the file realm's users file, hashed by x-pack's Hasher (bcrypt, the
//                             default of xpack.security.authc.password_hashing.algorithm), as the
//                             elasticsearch-users tool does
//
// Nothing here answers requests: it only prepares what the node reads.
package localnode;

import org.elasticsearch.bootstrap.ServerArgs;
import org.elasticsearch.common.io.stream.OutputStreamStreamOutput;
import org.elasticsearch.common.settings.KeyStoreWrapper;
import org.elasticsearch.common.settings.SecureString;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.xpack.core.security.authc.support.Hasher;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

public final class LocalNode {
    private LocalNode() {}

    public static void main(String[] args) throws Exception {
        // stdout carries the result alone; anything Elasticsearch's classes print goes to stderr.
        PrintStream stdout = System.out;
        System.setOut(System.err);
        if (args.length == 3 && args[0].equals("server-args")) {
            serverArgs(Path.of(args[1]), Path.of(args[2]), stdout);
        } else if (args.length == 1 && args[0].equals("hash")) {
            hash(stdout);
        } else {
            System.err.println("usage: LocalNode server-args HOME CONFIG | hash");
            System.exit(2);
        }
        stdout.flush();
    }

    private static void serverArgs(Path home, Path configDir, OutputStream out) throws Exception {
        Environment env = InternalSettingsPreparer.prepareEnvironment(
            Settings.builder().put(Environment.PATH_HOME_SETTING.getKey(), home.toString()).build(),
            Map.of(),
            configDir,
            () -> "local"
        );
        // An empty keystore password, as for a keystore that `elasticsearch-keystore create` made.
        KeyStoreWrapper keystore = KeyStoreWrapper.bootstrap(configDir, () -> new SecureString(new char[0]));
        ServerArgs serverArgs = new ServerArgs(false, false, null, keystore, env.settings(), configDir, env.logsDir());
        try (OutputStreamStreamOutput stream = new OutputStreamStreamOutput(out)) {
            serverArgs.writeTo(stream);
        }
    }

    private static void hash(PrintStream out) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;) {
            int colon = line.indexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("expected user:password lines");
            }
            char[] hash = Hasher.BCRYPT.hash(new SecureString(line.substring(colon + 1).toCharArray()));
            out.println(line.substring(0, colon) + ":" + new String(hash));
        }
    }
}
