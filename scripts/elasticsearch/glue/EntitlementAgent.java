// The Java agent that Elasticsearch attaches to itself at start to install its entitlement checks
// (the bytecode instrumentation of JDK methods that replaced the Security Manager).
//
// The tarball ships it as lib/entitlement-agent/elasticsearch-entitlement-agent-VERSION.jar, which
// is not published on Maven Central; the server finds the one jar in that folder and loads it with
// the name of its initialization class as the agent's argument. This is the same one-call agent:
// everything else (what to instrument, the policies) is Elasticsearch's own code in the
// org.elasticsearch.entitlement module, which exports that class to this agent before loading it.
package localnode;

import java.lang.instrument.Instrumentation;

public final class EntitlementAgent {
    private EntitlementAgent() {}

    public static void agentmain(String initializationClass, Instrumentation inst) throws Exception {
        Class.forName(initializationClass).getMethod("initialize", Instrumentation.class).invoke(null, inst);
    }
}
