// An OpenAI-compatible `POST /v1/chat/completions` around a real small model (Gemma 3
// 270M, run by node-llama-cpp's prebuilt llama.cpp), for `make real-model`.
//
// A 270M model cannot do native function calling, but it can fill in JSON that a grammar
// holds to a schema. So: while no tool has answered, the model picks a tool and its
// arguments under a grammar built from the request's `tools`; once a tool has answered,
// it writes the final text. Either way the answer goes back in the Chat Completions
// format, with real `tool_calls`. Usage: node server.mjs MODEL.gguf (prints the port).
import http from "node:http";
import {getLlama, LlamaChatSession} from "node-llama-cpp";

const [modelPath] = process.argv.slice(2);
const llama = await getLlama({build: "never", gpu: false});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({contextSize: 2048, threads: 1});
// One sequence serves every request in turn (the model is tiny; requests are few).
const sequence = context.getSequence();
let calls = 0;

/** A parameter schema reduced to what the grammar needs: types, every property required. */
function simplify(schema) {
    const properties = {};
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
        const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
        properties[name] = {type: ["string", "integer", "number", "boolean"].includes(type) ? type : "string"};
    }
    return {type: "object", properties};
}

/** The user's last question, and what the tools answered since. */
function situation(messages) {
    const question = messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
    const results = messages.filter((m) => m.role === "tool").map((m) => m.content);
    return {question, results};
}

async function answer(body) {
    await sequence.clearHistory();
    const session = new LlamaChatSession({contextSequence: sequence, autoDisposeSequence: false});
    try {
        const toolAnswered = body.messages.some((m) => m.role === "tool");
        const tools = (body.tools ?? []).map((t) => t.function);
        if (!toolAnswered && tools.length > 0) {
            const grammar = await llama.createGrammarForJsonSchema({
                oneOf: tools.map((t) => ({
                    type: "object",
                    properties: {tool: {const: t.name}, arguments: simplify(t.parameters ?? {})},
                })),
            });
            const {question} = situation(body.messages);
            const prompt =
                `Tools: ${tools.map((t) => `${t.name}: ${t.description ?? ""}`).join("; ")}\n` +
                `Question: ${question}\nCall the right tool with the numbers and words from the question, as JSON.`;
            const text = await session.prompt(prompt, {grammar, temperature: 0, maxTokens: 128});
            const call = grammar.parse(text);
            calls += 1;
            return {
                content: null,
                tool_calls: [{
                    id: `call_${calls}`,
                    type: "function",
                    function: {name: call.tool, arguments: JSON.stringify(call.arguments)},
                }],
                finish: "tool_calls",
            };
        }
        const {question, results} = situation(body.messages);
        const prompt = `Question: ${question}\nThe tool answered: ${results.join(", ")}\nGive the answer in one short sentence.`;
        const grammar = await llama.createGrammarForJsonSchema({type: "object", properties: {answer: {type: "string"}}});
        const text = await session.prompt(prompt, {grammar, temperature: 0, maxTokens: 48});
        return {content: grammar.parse(text).answer.trim() || "(no answer)", finish: "stop"};
    } finally {
        session.dispose();
    }
}

const server = http.createServer(async (request, response) => {
    let raw = "";
    for await (const piece of request) raw += piece;
    try {
        const body = JSON.parse(raw);
        const {content, tool_calls, finish} = await answer(body);
        const message = {role: "assistant", content, ...(tool_calls ? {tool_calls} : {})};
        const reply = {
            id: `chatcmpl-${Date.now()}`,
            object: "chat.completion",
            created: Math.floor(Date.now() / 1000),
            model: body.model,
            choices: [{index: 0, message, finish_reason: finish}],
            usage: {prompt_tokens: 0, completion_tokens: 0, total_tokens: 0},
        };
        response.writeHead(200, {"content-type": "application/json"});
        response.end(JSON.stringify(reply));
    } catch (error) {
        response.writeHead(500, {"content-type": "application/json"});
        response.end(JSON.stringify({error: {message: String(error)}}));
    }
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
