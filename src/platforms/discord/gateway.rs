//! The serenity gateway client: events in, adapter calls out.

use std::sync::Arc;

use async_trait::async_trait;
use serenity::all::{
    Context, EventHandler, GatewayIntents, Guild, GuildChannel, Interaction, Message, Ready,
};

use super::adapter::Discord;
use super::rest::ChannelInfo;

/// The gateway intents the bot needs: guilds (channels and threads), guild messages with their
/// content (mentions and thread messages), and direct messages.
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
        | GatewayIntents::DIRECT_MESSAGES
}

/// Forwards gateway events to the adapter.
pub struct Handler {
    /// Shared adapter state.
    pub discord: Arc<Discord>,
}

fn info(c: &GuildChannel) -> ChannelInfo {
    ChannelInfo {
        id: c.id.to_string(),
        kind: u64::from(u8::from(c.kind)),
        parent_id: c.parent_id.map(|p| p.to_string()),
        owner_id: c.owner_id.map(|o| o.to_string()),
        guild_id: Some(c.guild_id.to_string()),
    }
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        tracing::info!(user = %ready.user.name, shard = ?ready.shard, "Discord gateway ready");
        self.discord.set_bot_id(ready.user.id.to_string());
    }

    async fn guild_create(&self, _ctx: Context, guild: Guild, _is_new: Option<bool>) {
        // Knowing channels and threads up front saves a REST lookup per first message.
        for c in guild.channels.values().chain(guild.threads.iter()) {
            self.discord.remember_channel(info(c));
        }
    }

    async fn thread_create(&self, _ctx: Context, thread: GuildChannel) {
        self.discord.remember_channel(info(&thread));
    }

    async fn message(&self, _ctx: Context, msg: Message) {
        self.discord.on_message(&msg).await;
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        self.discord.on_gateway_interaction(interaction).await;
    }
}
