package io.github.cdkpromptserving.apps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.github.cdkpromptserving.PromptServingTable;
import io.github.cdkpromptserving.apps.readme.*;
import io.github.cdklabs.cdknag.AwsSolutionsChecks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import software.amazon.awscdk.Acknowledgment;
import software.amazon.awscdk.App;
import software.amazon.awscdk.Environment;
import software.amazon.awscdk.PolicyValidationPluginReport;
import software.amazon.awscdk.Stack;
import software.amazon.awscdk.StackProps;
import software.amazon.awscdk.Validations;
import software.amazon.awscdk.assertions.Match;
import software.amazon.awscdk.assertions.Template;
import software.amazon.awscdk.services.cloudwatch.Alarm;
import software.amazon.awscdk.services.cloudwatch.Metric;
import software.amazon.awscdk.services.ec2.SubnetConfiguration;
import software.amazon.awscdk.services.ec2.SubnetType;
import software.amazon.awscdk.services.ec2.Vpc;
import software.amazon.awscdk.services.iam.AccountRootPrincipal;
import software.amazon.awscdk.services.iam.Role;
import software.amazon.awscdk.services.iam.ServicePrincipal;
import software.amazon.awscdk.services.kms.Key;
import software.amazon.awscdk.services.lambda.Code;
import software.amazon.awscdk.services.lambda.Function;
import software.amazon.awscdk.services.lambda.Runtime;
import software.amazon.awscdk.services.sns.Topic;
import software.constructs.IConstruct;

/**
 * The README's construct examples, synthesized from a Java CDK app with the construct's jar (jsii-pacmak's Java
 * target): the same stacks and intents as the Python app test (test/apps/python/test_app.py) and the TypeScript
 * tests, and cdk-nag's AwsSolutions pack. Templates go to PROMPT_SERVING_TEMPLATE_DIR for cfn-lint when it is set.
 */
class ReadmeExamplesTest {
    private static final Environment ENV = Environment.builder().account("123456789012").region("eu-west-1").build();
    private static final List<String> READ_ACTIONS = List.of("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query");
    private static final String BASIC_ROLE = "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]";
    private static final String VPC_ROLE = "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]";
    private static final Map<String, String> REASONS = Map.of(
        BASIC_ROLE, "the app's own test function keeps Lambda's managed logging policy, as most apps do",
        VPC_ROLE, "the app's own test function in the VPC keeps Lambda's managed network-interface policy",
        "AwsSolutions-VPC7", "the app's own test VPC has no NAT and carries no traffic worth flow logs in a synth test",
        "AwsSolutions-L1", "the app's own test function pins a runtime so the template does not change with CDK releases");

    /** One synthesized example: the app, its stack and the stack's template. */
    record Synth(App app, Stack stack, Template template) {}

    private static void appAcknowledge(IConstruct construct, String... ids) {
        Validations.of(construct).acknowledge(Stream.of(ids)
            .map(id -> Acknowledgment.builder().id(id).reason(REASONS.get(id)).build()).toArray(Acknowledgment[]::new));
    }

    /** What the examples declare (`declare const vpc: ec2.IVpc;`), made the way an app would make it. */
    private static Vpc vpc(Stack stack) {
        Vpc vpc = Vpc.Builder.create(stack, "Vpc").maxAzs(2).natGateways(0)
            .subnetConfiguration(List.of(SubnetConfiguration.builder().name("isolated").subnetType(SubnetType.PRIVATE_ISOLATED).build()))
            .build();
        appAcknowledge(vpc, "AwsSolutions-VPC7");
        return vpc;
    }

    /** A Python reader function (in `vpc` when given): what addReader wires. */
    private static Function reader(Stack stack, Vpc vpc) {
        Function fn = Function.Builder.create(stack, "Reader").runtime(Runtime.PYTHON_3_13).handler("index.handler")
            .code(Code.fromInline("import os\n\ndef handler(event, context):\n    return os.environ['PROMPT_SERVING_TABLE_NAME']\n"))
            .vpc(vpc).build();
        if (vpc != null) {
            appAcknowledge(fn, BASIC_ROLE, "AwsSolutions-L1", VPC_ROLE);
        } else {
            appAcknowledge(fn, BASIC_ROLE, "AwsSolutions-L1");
        }
        return fn;
    }

    static Synth synth(String name, Consumer<Stack> example) {
        App app = new App();
        Stack stack = new Stack(app, "Stack", StackProps.builder().env(ENV).build());
        example.accept(stack);
        // The examples' own NodejsFunction (`Inference`) is the app's, not the construct's.
        for (IConstruct child : stack.getNode().getChildren()) {
            if (child instanceof Function fn && !"Reader".equals(child.getNode().getId())) {
                appAcknowledge(fn, BASIC_ROLE, "AwsSolutions-L1");
            }
        }
        Template template = Template.fromStack(stack);
        String dir = System.getenv("PROMPT_SERVING_TEMPLATE_DIR");
        if (dir != null && !dir.isEmpty()) {
            try {
                Files.createDirectories(Path.of(dir));
                new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                    .writeValue(Path.of(dir, "java-" + name + ".template.json").toFile(), template.toJSON());
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }
        return new Synth(app, stack, template);
    }

    static Stream<Arguments> examples() {
        return Stream.of(
            Arguments.of("smallest_deployment", (Consumer<Stack>) SmallestDeployment::apply),
            Arguments.of("smallest_deployment_2", (Consumer<Stack>) SmallestDeployment2::apply),
            Arguments.of("prompts_as_code", (Consumer<Stack>) PromptsAsCode::apply),
            Arguments.of("only_some_bedrock_prompts_or_their_drafts", (Consumer<Stack>) OnlySomeBedrockPromptsOrTheirDrafts::apply),
            Arguments.of("encryption_billing_and_retention", (Consumer<Stack>) EncryptionBillingAndRetention::apply),
            Arguments.of("cache_tier_elasticache_for_valkey", (Consumer<Stack>) s -> {
                Vpc vpc = vpc(s);
                CacheTierElasticacheForValkey.apply(s, vpc, reader(s, vpc));
            }),
            Arguments.of("readers_in_another_stack_app_or_account", (Consumer<Stack>) ReadersInAnotherStackAppOrAccount::apply),
            Arguments.of("multi_region", (Consumer<Stack>) MultiRegion::apply),
            Arguments.of("operating_it", (Consumer<Stack>) s -> OperatingIt.apply(s, Topic.Builder.create(s, "Pager").enforceSsl(true)
                .masterKey(software.amazon.awscdk.services.kms.Alias.fromAliasName(s, "SnsKey", "alias/aws/sns")).build())),
            Arguments.of("release_a_change_labels_rollouts_gate_audit", (Consumer<Stack>) s -> ReleaseAChangeLabelsRolloutsGateAudit.apply(s,
                Function.Builder.create(s, "Gate").runtime(Runtime.NODEJS_22_X).handler("index.handler")
                    .code(Code.fromInline("exports.handler = async () => ({ allow: true, reason: 'ok' });")).build(),
                Alarm.Builder.create(s, "CheckoutErrors").metric(Metric.Builder.create().namespace("Shop").metricName("Errors").build())
                    .threshold(1).evaluationPeriods(1).build(),
                Role.Builder.create(s, "Pipeline").assumedBy(new AccountRootPrincipal()).build())),
            Arguments.of("prompt_serving_table_add_reader", (Consumer<Stack>) PromptServingTableAddReader::apply),
            Arguments.of("prompt_serving_table_from_table_attributes", (Consumer<Stack>) s ->
                PromptServingTableFromTableAttributes.apply(s, reader(s, null), Key.Builder.create(s, "Key").enableKeyRotation(true).build())),
            Arguments.of("prompt_serving_table_from_table_name", (Consumer<Stack>) s -> PromptServingTableFromTableName.apply(s, reader(s, null))),
            Arguments.of("prompt_serving_table_grant_read", (Consumer<Stack>) s -> PromptServingTableGrantRead.apply(s,
                Role.Builder.create(s, "ReaderRole").assumedBy(new ServicePrincipal("lambda.amazonaws.com")).build())),
            Arguments.of("prompt_source_from_directory", (Consumer<Stack>) PromptSourceFromDirectory::apply));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("examples")
    void everyExampleSynthesizesWithNoUnacknowledgedAwsSolutionsFinding(String name, Consumer<Stack> example) {
        // GIVEN / WHEN
        Synth synth = synth(name, example);
        PolicyValidationPluginReport report = new AwsSolutionsChecks(synth.app()).validateScope(synth.stack());
        // THEN
        List<String> findings = report.getViolations().stream()
            .map(v -> v.getRuleName() + " at " + v.getViolatingResources().stream().map(r -> r.getConstructPath()).collect(Collectors.toList()))
            .collect(Collectors.toList());
        assertEquals(List.of(), findings);
        assertTrue(report.getSuccess());
    }

    @Test
    void everyGeneratedExampleIsListed() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("java/src/test/java/io/github/cdkpromptserving/apps/readme"))) {
            assertEquals(files.count(), examples().count());
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> props(Map<String, Object> resource) {
        return (Map<String, Object>) resource.get("Properties");
    }

    private static Map<String, Map<String, Object>> resources(Template template, String type) {
        return template.findResources(type).entrySet().stream()
            .collect(Collectors.toMap(Map.Entry::getKey, e -> (Map<String, Object>) e.getValue()));
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> statementsOfRole(Template template, String rolePrefix) {
        List<Map<String, Object>> statements = new ArrayList<>();
        for (Map<String, Object> policy : resources(template, "AWS::IAM::Policy").values()) {
            List<Map<String, Object>> roles = (List<Map<String, Object>>) props(policy).getOrDefault("Roles", List.of());
            if (roles.stream().anyMatch(ref -> String.valueOf(ref.get("Ref")).startsWith(rolePrefix))) {
                statements.addAll((List<Map<String, Object>>) ((Map<String, Object>) props(policy).get("PolicyDocument")).get("Statement"));
            }
        }
        return statements;
    }

    @Test
    void bedrockSourceTableKeysRecoveryAndSyncPermissions() {
        // GIVEN / WHEN
        Template template = synth("smallest_deployment", SmallestDeployment::apply).template();
        // THEN
        template.resourceCountIs("AWS::DynamoDB::GlobalTable", 1);
        template.hasResourceProperties("AWS::DynamoDB::GlobalTable", Map.of(
            "KeySchema", List.of(Map.of("AttributeName", "prompt_id", "KeyType", "HASH"), Map.of("AttributeName", "version", "KeyType", "RANGE")),
            "BillingMode", "PAY_PER_REQUEST",
            "Replicas", List.of(Match.objectLike(Map.of(
                "Region", "eu-west-1",
                "PointInTimeRecoverySpecification", Map.of("PointInTimeRecoveryEnabled", true),
                "DeletionProtectionEnabled", true)))));
        template.hasResource("AWS::DynamoDB::GlobalTable", Map.of("DeletionPolicy", "Retain", "UpdateReplacePolicy", "Retain"));
        template.hasResourceProperties("AWS::IAM::Policy", Map.of("PolicyDocument", Map.of("Statement", Match.arrayWith(List.of(Map.of(
            "Effect", "Allow",
            "Action", List.of("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:PutItem", "dynamodb:UpdateItem"),
            "Resource", Map.of("Fn::GetAtt", List.of(Match.stringLikeRegexp("^PromptsTable"), "Arn"))))))));
        template.hasResourceProperties("AWS::IAM::Policy", Map.of(
            "PolicyName", Match.stringLikeRegexp("^PromptsSourceReadPolicy"),
            "PolicyDocument", Map.of("Statement", List.of(
                Map.of("Effect", "Allow", "Action", "bedrock:ListPrompts", "Resource", "*"),
                Map.of("Effect", "Allow", "Action", "bedrock:GetPrompt", "Resource", Map.of("Fn::Join", List.of("", List.of(
                    "arn:", Map.of("Ref", "AWS::Partition"), ":bedrock:eu-west-1:123456789012:prompt/*"))))))));
    }

    @Test
    void readerFunctionGetsExactlyTheReadActionsAndTheTableName() {
        // GIVEN / WHEN
        Template template = synth("smallest_deployment_2", SmallestDeployment2::apply).template();
        // THEN
        String tableId = resources(template, "AWS::DynamoDB::GlobalTable").keySet().iterator().next();
        List<Map<String, Object>> readers = resources(template, "AWS::Lambda::Function").entrySet().stream()
            .filter(e -> e.getKey().startsWith("Inference")).map(Map.Entry::getValue).collect(Collectors.toList());
        assertEquals(1, readers.size());
        assertEquals(Map.of("Variables", Map.of("PROMPT_SERVING_TABLE_NAME", Map.of("Ref", tableId))), props(readers.get(0)).get("Environment"));
        List<Map<String, Object>> statements = statementsOfRole(template, "InferenceServiceRole");
        assertEquals(List.of(READ_ACTIONS), statements.stream().map(s -> s.get("Action")).collect(Collectors.toList()));
    }

    @Test
    @SuppressWarnings("unchecked")
    void cacheTierReaderIsAPythonFunctionInTheVpcWithTheCacheEnvironment() {
        // GIVEN / WHEN
        Template template = synth("cache_tier_elasticache_for_valkey", s -> {
            Vpc vpc = vpc(s);
            CacheTierElasticacheForValkey.apply(s, vpc, reader(s, vpc));
        }).template();
        // THEN
        template.resourceCountIs("AWS::ElastiCache::ServerlessCache", 1);
        String tableId = resources(template, "AWS::DynamoDB::GlobalTable").keySet().iterator().next();
        String cacheId = resources(template, "AWS::ElastiCache::ServerlessCache").keySet().iterator().next();
        Map<String, Object> reader = props(resources(template, "AWS::Lambda::Function").entrySet().stream()
            .filter(e -> e.getKey().startsWith("Reader")).findFirst().orElseThrow().getValue());
        assertEquals("python3.13", reader.get("Runtime"));
        assertFalse(((List<Object>) ((Map<String, Object>) reader.get("VpcConfig")).get("SubnetIds")).isEmpty());
        Map<String, Object> variables = (Map<String, Object>) ((Map<String, Object>) reader.get("Environment")).get("Variables");
        assertEquals(Map.of("Ref", tableId), variables.get("PROMPT_SERVING_TABLE_NAME"));
        assertEquals(Map.of("Fn::Join", List.of("", List.of(Map.of("Fn::GetAtt", List.of(cacheId, "Endpoint.Address")), ":",
            Map.of("Fn::GetAtt", List.of(cacheId, "Endpoint.Port"))))), variables.get("PROMPT_SERVING_CACHE_ENDPOINT"));
        assertEquals("true", variables.get("PROMPT_SERVING_CACHE_TLS"));
        assertEquals("iam", variables.get("PROMPT_SERVING_CACHE_AUTH"));
        List<Object> actions = statementsOfRole(template, "ReaderServiceRole").stream().map(s -> s.get("Action")).collect(Collectors.toList());
        assertTrue(actions.contains("elasticache:Connect"), actions.toString());
        assertTrue(actions.contains(READ_ACTIONS), actions.toString());
    }

    @Test
    void importedTableReaderIsGrantedThatTableByArn() {
        // GIVEN / WHEN
        Template template = synth("readers_in_another_stack_app_or_account", ReadersInAnotherStackAppOrAccount::apply).template();
        // THEN
        template.resourceCountIs("AWS::DynamoDB::GlobalTable", 0);
        List<Map<String, Object>> statements = statementsOfRole(template, "InferenceServiceRole");
        assertEquals(List.of(READ_ACTIONS), statements.stream().map(s -> s.get("Action")).collect(Collectors.toList()));
        assertTrue(String.valueOf(statements.get(0).get("Resource")).contains(":dynamodb:eu-west-1:123456789012:table/prompts-prod"));
        template.hasResourceProperties("AWS::Lambda::Function", Map.of(
            "Environment", Map.of("Variables", Map.of("PROMPT_SERVING_TABLE_NAME", "prompts-prod"))));
    }

    @Test
    @SuppressWarnings("unchecked")
    void replicasInEachRegionNextToThePrimary() {
        // GIVEN / WHEN
        Template template = synth("multi_region", MultiRegion::apply).template();
        // THEN
        Map<String, Object> table = props(resources(template, "AWS::DynamoDB::GlobalTable").values().iterator().next());
        assertEquals("prompts-prod", table.get("TableName"));
        List<Map<String, Object>> replicas = (List<Map<String, Object>>) table.get("Replicas");
        assertEquals(List.of("ap-southeast-2", "eu-west-1", "us-east-1"), replicas.stream().map(r -> (String) r.get("Region")).sorted().collect(Collectors.toList()));
        for (Map<String, Object> replica : replicas) {
            assertEquals(Map.of("PointInTimeRecoveryEnabled", true), replica.get("PointInTimeRecoverySpecification"));
        }
    }

    @Test
    void cdkNagStillReportsAWildcardAddedToTheConstructLater() {
        // GIVEN
        Synth synth = synth("smallest_deployment", SmallestDeployment::apply);
        PromptServingTable prompts = (PromptServingTable) synth.stack().getNode().findChild("Prompts");
        // WHEN
        prompts.getSyncFunction().addToRolePolicy(software.amazon.awscdk.services.iam.PolicyStatement.Builder.create()
            .actions(List.of("s3:GetObject")).resources(List.of("*")).build());
        PolicyValidationPluginReport report = new AwsSolutionsChecks(synth.app()).validateScope(synth.stack());
        // THEN
        assertEquals(List.of("AwsSolutions-IAM5[Resource::*]"),
            report.getViolations().stream().map(v -> v.getRuleName()).collect(Collectors.toList()));
    }

    @Test
    void theExamplesUseTheConstructFromTheJar() {
        String location = PromptServingTable.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertTrue(location.endsWith(".jar"), location);
    }
}
