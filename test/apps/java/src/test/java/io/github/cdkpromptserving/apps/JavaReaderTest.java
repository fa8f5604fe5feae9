package io.github.cdkpromptserving.apps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.cdkpromptserving.PromptCache;
import io.github.cdkpromptserving.PromptServingTable;
import io.github.cdkpromptserving.PromptSource;
import io.github.cdkpromptserving.ServerlessPromptCacheOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awscdk.App;
import software.amazon.awscdk.Environment;
import software.amazon.awscdk.Stack;
import software.amazon.awscdk.StackProps;
import software.amazon.awscdk.assertions.Annotations;
import software.amazon.awscdk.assertions.Match;
import software.amazon.awscdk.assertions.Template;
import software.amazon.awscdk.services.ec2.SubnetConfiguration;
import software.amazon.awscdk.services.ec2.SubnetType;
import software.amazon.awscdk.services.ec2.Vpc;
import software.amazon.awscdk.services.lambda.Code;
import software.amazon.awscdk.services.lambda.Function;
import software.amazon.awscdk.services.lambda.Runtime;

/**
 * A Java Lambda reader wired with {@code addReader} from a Java CDK app: the function a Java team deploys with the Java
 * runtime client in its jar. Its code here is a placeholder asset (a directory with one class file's name): the
 * template, not the code, is under test.
 */
class JavaReaderTest {
    private static final Environment ENV = Environment.builder().account("123456789012").region("eu-west-1").build();
    private static final List<String> READ_ACTIONS = List.of("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query");

    @Test
    @SuppressWarnings("unchecked")
    void aJavaReaderGetsTheTableTheCacheAndTheInfoButNoLayer() throws IOException {
        // GIVEN a Java 21 function (code from an asset) in the cache's VPC
        App app = new App();
        Stack stack = new Stack(app, "Stack", StackProps.builder().env(ENV).build());
        Vpc vpc = Vpc.Builder.create(stack, "Vpc").maxAzs(2).natGateways(0)
            .subnetConfiguration(List.of(SubnetConfiguration.builder().name("isolated").subnetType(SubnetType.PRIVATE_ISOLATED).build()))
            .build();
        Path asset = Files.createTempDirectory("java-reader-asset");
        Files.writeString(asset.resolve("README.txt"), "placeholder for the function's shaded jar (com/example/TriageHandler.class)\n");
        Function fn = Function.Builder.create(stack, "JavaReader").runtime(Runtime.JAVA_21)
            .handler("com.example.TriageHandler::handleRequest").code(Code.fromAsset(asset.toString()))
            .memorySize(1024).vpc(vpc).build();
        PromptServingTable prompts = PromptServingTable.Builder.create(stack, "Prompts")
            .source(PromptSource.bedrock())
            .cache(PromptCache.serverless(ServerlessPromptCacheOptions.builder().vpc(vpc).build()))
            .build();

        // WHEN it is made a reader
        prompts.addReader(fn);
        Template template = Template.fromStack(stack);

        // THEN the function reads the table and the cache from its environment, with no layer attached
        String tableId = template.findResources("AWS::DynamoDB::GlobalTable").keySet().iterator().next();
        String cacheId = template.findResources("AWS::ElastiCache::ServerlessCache").keySet().iterator().next();
        Map<String, Object> function = null;
        for (Map.Entry<String, Map<String, Object>> e : template.findResources("AWS::Lambda::Function").entrySet()) {
            if (e.getKey().startsWith("JavaReader")) {
                function = (Map<String, Object>) e.getValue().get("Properties");
            }
        }
        assertTrue(function != null, "the Java reader is in the template");
        assertEquals("java21", function.get("Runtime"));
        assertNull(function.get("Layers"), "a Java reader gets no layer: its jar carries the Java runtime client");
        Map<String, Object> variables = (Map<String, Object>) ((Map<String, Object>) function.get("Environment")).get("Variables");
        assertEquals(Map.of("Ref", tableId), variables.get("PROMPT_SERVING_TABLE_NAME"));
        assertEquals(Map.of("Fn::Join", List.of("", List.of(Map.of("Fn::GetAtt", List.of(cacheId, "Endpoint.Address")), ":",
            Map.of("Fn::GetAtt", List.of(cacheId, "Endpoint.Port"))))), variables.get("PROMPT_SERVING_CACHE_ENDPOINT"));
        assertEquals("true", variables.get("PROMPT_SERVING_CACHE_TLS"));
        assertEquals("iam", variables.get("PROMPT_SERVING_CACHE_AUTH"));

        // and its role is granted exactly the table's read actions and the cache's connect
        List<Object> actions = new ArrayList<>();
        for (Map<String, Object> policy : template.findResources("AWS::IAM::Policy").values()) {
            Map<String, Object> props = (Map<String, Object>) policy.get("Properties");
            List<Map<String, Object>> roles = (List<Map<String, Object>>) props.getOrDefault("Roles", List.of());
            if (roles.stream().anyMatch(ref -> String.valueOf(ref.get("Ref")).startsWith("JavaReaderServiceRole"))) {
                for (Map<String, Object> s : (List<Map<String, Object>>) ((Map<String, Object>) props.get("PolicyDocument")).get("Statement")) {
                    actions.add(s.get("Action"));
                }
            }
        }
        assertTrue(actions.contains(READ_ACTIONS), actions.toString());
        assertTrue(actions.contains("elasticache:Connect"), actions.toString());

        // and the cache's security group admits the function's
        boolean admitted = template.findResources("AWS::EC2::SecurityGroupIngress").values().stream()
            .anyMatch(r -> String.valueOf(((Map<String, Object>) r.get("Properties")).get("SourceSecurityGroupId")).contains("JavaReaderSecurityGroup"));
        assertTrue(admitted, "an ingress rule from the Java reader's security group");

        // and synth says which client to read with (an info), not that there is none (the warning other runtimes get)
        Annotations annotations = Annotations.fromStack(stack);
        annotations.hasInfo("/Stack/JavaReader", Match.stringLikeRegexp(".*Java runtime client.*cdk-prompt-serving-runtime.*"));
        annotations.hasNoWarning("*", Match.stringLikeRegexp(".*ships no cache client.*"));
    }
}
