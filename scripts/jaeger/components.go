// Jaeger v2 with the components the synthesized Jaeger configuration uses (lib/tracing/jaeger-config.ts:
// the health check, the storage and query extensions; the OTLP, Jaeger and no-op receivers; the storage
// and no-op exporters), built by scripts/binaries.sh: it replaces cmd/jaeger/internal/components.go in
// its copy of the Jaeger module, so Jaeger's own main and command run with these factories in place of
// all of upstream's. Kafka, Zipkin, the AWS signing and Prometheus exporter, span metrics, remote and
// adaptive sampling and the e2e-only extensions it leaves out are a quarter of a full build's compile
// time; a configuration naming any of them fails `jaeger validate` (test/trace/dist-configs.test.ts),
// saying which.
package internal

import (
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckv2extension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/jaegerreceiver"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/nopexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/nopreceiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/exporters/storageexporter"
	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/extension/jaegerquery"
	"github.com/jaegertracing/jaeger/cmd/jaeger/internal/extension/jaegerstorage"
)

// Components is what upstream's components.go exports to the command (command.go).
func Components() (otelcol.Factories, error) {
	var err error
	factories := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	factories.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](
		healthcheckv2extension.NewFactory(),
		jaegerquery.NewFactory(),
		jaegerstorage.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](
		otlpreceiver.NewFactory(),
		jaegerreceiver.NewFactory(),
		// A query-only process's pipeline neither receives nor writes.
		nopreceiver.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		storageexporter.NewFactory(),
		nopexporter.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	return factories, nil
}
